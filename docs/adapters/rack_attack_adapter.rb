#!/usr/bin/env ruby
# ratelab exec adapter for Rack::Attack (6.6, on redis-rb 4.8): a throttle
# with its cache in Redis, run as a Rack middleware, unchanged.
#
#   ratelab verify --exec 'ruby docs/adapters/rack_attack_adapter.rb' --limit 60 --window 1m
#
# Each request goes through the middleware with its key in a header the
# throttle reads; 429 is denied. A request of cost c is c requests to the
# throttle (Rack::Attack counts requests): allowed when the last one is.
require 'json'
require 'redis'
require 'rack'
require 'rack/attack'

# The library's own clock: Rack::Attack::Cache names the window from
# Time.now. Answer it from the request's instant; the Redis side (the
# counter's TTL) is on that instant already, through REDIS_URL.
module RatelabNow
  def now(*args, **kw)
    $ratelab_now || super
  end
end
Time.singleton_class.prepend(RatelabNow)

limit = Integer(ENV.fetch('RATELAB_LIMIT'))
window_ms = Integer(ENV.fetch('RATELAB_WINDOW_MS'))
abort "Rack::Attack counts periods in whole seconds; RATELAB_WINDOW_MS=#{window_ms} is not" unless (window_ms % 1000).zero?

Rack::Attack.cache.store = Redis.new(url: ENV.fetch('REDIS_URL'))
Rack::Attack.throttle('ratelab', limit: limit, period: window_ms / 1000) do |req|
  req.get_header('HTTP_X_RATELAB_KEY')
end
app = Rack::Attack.new(->(_env) { [200, {}, ['ok']] })

$stdout.sync = true
$stdin.each_line do |line|
  req = JSON.parse(line)
  us = req.fetch('now_us')
  $ratelab_now = Time.at(us / 1_000_000, us % 1_000_000, :usec)
  status = nil
  req.fetch('cost').times do
    status, = app.call(Rack::MockRequest.env_for('/', 'HTTP_X_RATELAB_KEY' => req.fetch('key'), 'REMOTE_ADDR' => '127.0.0.1'))
  end
  $ratelab_now = nil
  puts JSON.generate(allowed: status != 429)
end
