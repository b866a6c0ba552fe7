#!/usr/bin/env python3
"""ratelab exec adapter for the Python `limits` library (2.8, on redis-py).

    ratelab verify --exec 'python3 docs/adapters/limits_adapter.py fixed-window' --limit 60 --window 1m

The argument picks the strategy: fixed-window, moving-window or
fixed-window-elastic-expiry (limits.strategies.STRATEGIES). The library
runs unchanged; only its clock is set from each request's now_us.
"""
import json
import os
import sys
import time as _time

import limits
import limits.storage.redis
from limits.strategies import STRATEGIES

# The library's own clock: limits.storage.redis calls time.time() (the
# moving window's timestamps). Replace the module's `time` with one that
# reads the request's instant, so the library decides at ratelab's
# virtual time; the Redis side (TTLs, TIME) is on that instant already,
# through REDIS_URL.
_now = [0.0]


class _Clock:
    def __getattr__(self, name):
        return getattr(_time, name)

    @staticmethod
    def time():
        return _now[0]


limits.storage.redis.time = _Clock()


def main():
    strategy = STRATEGIES[sys.argv[1] if len(sys.argv) > 1 else "fixed-window"]
    window_ms = int(os.environ["RATELAB_WINDOW_MS"])
    if window_ms % 1000:
        sys.exit("limits counts windows in whole seconds; RATELAB_WINDOW_MS=%d is not" % window_ms)
    item = limits.RateLimitItemPerSecond(int(os.environ["RATELAB_LIMIT"]), window_ms // 1000)
    storage = limits.storage.storage_from_string(os.environ["REDIS_URL"])
    limiter = strategy(storage)
    for line in sys.stdin:
        req = json.loads(line)
        _now[0] = req["now_us"] / 1e6
        ok = limiter.hit(item, req["key"], cost=req["cost"])
        print(json.dumps({"allowed": ok}), flush=True)


if __name__ == "__main__":
    main()
