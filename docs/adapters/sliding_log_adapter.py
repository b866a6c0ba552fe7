#!/usr/bin/env python3
"""ratelab exec adapter: a sliding-window log in application code, on redis-py.

    ratelab verify --exec 'python3 docs/adapters/sliding_log_adapter.py check-then-act' --limit 60 --window 1m

Each Redis command is its own round trip, as application code often sends
them; the argument picks the order:

  check-then-act  ZREMRANGEBYSCORE, ZCARD, then ZADD when under the limit:
                  two clients can both count L-1 and both add (a race).
  add-then-check  ZADD first, then ZREMRANGEBYSCORE and ZCARD, and ZREM of
                  its own entries when over: a client counts every entry
                  added before its count, so no two can both slip in.

The log's timestamps are the request's now_us: this limiter reads no clock
of its own.
"""
import json
import os
import sys
import uuid

import redis


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "check-then-act"
    if mode not in ("check-then-act", "add-then-check"):
        sys.exit("mode: check-then-act or add-then-check, got %r" % mode)
    limit = int(os.environ["RATELAB_LIMIT"])
    window_us = int(os.environ["RATELAB_WINDOW_MS"]) * 1000
    r = redis.from_url(os.environ["REDIS_URL"])
    for line in sys.stdin:
        req = json.loads(line)
        key, cost, now = req["key"], req["cost"], req["now_us"]
        members = {"%d-%s" % (now, uuid.uuid4().hex): now for _ in range(cost)}
        if mode == "check-then-act":
            r.zremrangebyscore(key, "-inf", now - window_us)
            allowed = r.zcard(key) + cost <= limit
            if allowed:
                r.zadd(key, members)
                r.pexpire(key, window_us // 1000)
        else:
            r.zadd(key, members)
            r.zremrangebyscore(key, "-inf", now - window_us)
            allowed = r.zcard(key) <= limit
            if not allowed:
                r.zrem(key, *members)
            r.pexpire(key, window_us // 1000)
        print(json.dumps({"allowed": allowed}), flush=True)


if __name__ == "__main__":
    main()
