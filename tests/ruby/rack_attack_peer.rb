# Decides requests as rack-attack does (Debian's ruby-rack-attack), on a frozen clock.
#
#     ruby rack_attack_peer.rb LIMIT PERIOD_SECONDS < requests
#
# Each line of stdin is `micros,key,cost`, in time order; each line of stdout is 1 (passed)
# or 0 (refused, the middleware's 429). The real middleware runs one throttle keyed by a
# request header, its cache ActiveSupport's MemoryStore; Time.now, which both read, is
# each request's time.
require 'rack'
require 'rack/mock'
require 'active_support'
require 'active_support/cache'
require 'rack/attack'

limit = Integer(ARGV.fetch(0))
period = Integer(ARGV.fetch(1))

$now = Time.at(0)
class << Time
  def now
    $now
  end
end

Rack::Attack.cache.store = ActiveSupport::Cache::MemoryStore.new
Rack::Attack.throttle('requests', limit: limit, period: period) do |request|
  request.get_header('HTTP_X_KEY')
end
app = Rack::Attack.new(->(_env) { [200, {}, ['ok']] })

out = []
STDIN.each_line do |line|
  line = line.chomp
  next if line.empty?
  micros, key, = line.split(',', -1)
  $now = Time.at(Rational(Integer(micros), 1_000_000))
  status, = app.call(Rack::MockRequest.env_for('/', 'HTTP_X_KEY' => key))
  raise "status #{status}" unless [200, 429].include?(status)
  out << (status == 200 ? '1' : '0')
end
puts out
