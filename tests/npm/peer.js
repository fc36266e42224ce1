// Decides requests as a real npm limiter does, on Node's own fake clock.
//
//     node --no-warnings peer.js SYSTEM [key=value ...] < requests
//
// Each line of stdin is `micros,key,cost`, in time order; each line of stdout is 1 (passed)
// or 0 (refused), one a request. `Date.now` and the timers are node:test's MockTimers, moved
// to each request's whole millisecond before it is decided, so that every timer due by then
// (express-rate-limit's resets, rate-limiter-flexible's expiries) has run, as on a live
// server whose clock reads that millisecond.
'use strict';

const { mock } = require('node:test');
const readline = require('node:readline');

const [system, ...words] = process.argv.slice(2);
const options = Object.fromEntries(words.map((word) => word.split('=')));
const number = (key) => {
  const value = Number(options[key]);
  if (!Number.isFinite(value)) throw new Error(`${system} needs ${key}=NUMBER`);
  return value;
};

// With `port=P clock=FILE`, the limiter's store is the redis-server on that loopback port,
// whose clock (libfaketime's, frozen) is each request's µs written to FILE before it is
// decided; Node's own timers are then left alone (ioredis runs on them).
const fs = require('node:fs');
const Redis = options.port === undefined ? undefined : require('ioredis');
const redis = Redis && new Redis({ host: '127.0.0.1', port: number('port'), lazyConnect: false });

/// Stops the server's clock at `micros` after 1970, written whole (a rename); libfaketime
/// reads the fraction as a double and cuts it to ns, so half a nanosecond more keeps each
/// µs exact.
function setClock(micros) {
  const seconds = Math.floor(micros / 1e6);
  const date = new Date(seconds * 1000).toISOString().slice(0, 19).replace('T', ' ');
  const fraction = String(micros - seconds * 1e6).padStart(6, '0');
  fs.writeFileSync(`${options.clock}.new`, `${date}.${fraction}0005\n`);
  fs.renameSync(`${options.clock}.new`, options.clock);
}

// The clock starts at the first request's millisecond; with `origin=aligned`, at the whole
// multiple of windowMs before it, where express-rate-limit v6 then starts its interval.
let clock;
let decide;

/// Makes the system's limiter, once the clock is set, and returns how it decides a request.
function limiter() {
  switch (system) {
    case 'express-rate-limit': {
      // The real middleware, each request a bare object carrying its key; `next` is
      // called for a request it lets through, the 429 handler for one it refuses.
      const v6 = options.version === '6';
      const rateLimit = require(v6 ? 'express-rate-limit-v6' : 'express-rate-limit');
      const middleware = (rateLimit.rateLimit ?? rateLimit.default ?? rateLimit)({
        windowMs: number('windowMs'),
        [v6 ? 'max' : 'limit']: number('limit'),
        keyGenerator: (request) => request.key,
        standardHeaders: false,
        legacyHeaders: false,
        validate: false,
        handler: (request, response) => {
          response.refused = true;
        },
      });
      return async (key) => {
        const response = { setHeader() {}, headersSent: false, on() {}, refused: false };
        let passed = false;
        await middleware({ key, ip: '127.0.0.1', app: { get() {} } }, response, () => {
          passed = true;
        });
        if (passed === response.refused) throw new Error('neither passed nor refused');
        return passed;
      };
    }
    case 'rate-limiter-flexible': {
      const { RateLimiterMemory, RateLimiterRedis } = require('rate-limiter-flexible');
      const settings = {
        points: number('points'),
        duration: number('duration'),
        blockDuration: options.blockDuration === undefined ? 0 : number('blockDuration'),
      };
      const rl = redis
        ? new RateLimiterRedis({ ...settings, storeClient: redis, useRedisPackage: false })
        : new RateLimiterMemory(settings);
      return (key, cost) =>
        rl.consume(key, cost).then(
          () => true,
          (refusal) => {
            if (refusal instanceof Error) throw refusal;
            return false;
          },
        );
    }
    case 'nestjs-throttler': {
      // The guard refuses a request exactly when the storage's `increment` says it is
      // blocked (`ThrottlerGuard.handleRequest`); the storage is the module's default.
      require('reflect-metadata');
      const { ThrottlerStorageService } = require('@nestjs/throttler');
      const storage = new ThrottlerStorageService();
      const [ttl, limit] = [number('ttl'), number('limit')];
      const block = options.blockDuration === undefined ? ttl : number('blockDuration');
      return async (key) => {
        const { isBlocked } = await storage.increment(key, ttl, limit, block, 'default');
        return !isBlocked;
      };
    }
    default:
      throw new Error(`no such system: ${system}`);
  }
}

async function main() {
  const out = [];
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line === '') continue;
    const [micros, key, cost] = line.split(',');
    const ms = Math.floor(Number(micros) / 1000);
    if (redis) {
      decide ??= limiter();
      setClock(Number(micros));
    } else {
      if (clock === undefined) {
        const window = options.origin === 'aligned' ? number('windowMs') : 1;
        clock = ms - (((ms % window) + window) % window);
        mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'], now: clock });
        decide = limiter();
      }
      if (ms > clock) {
        mock.timers.tick(ms - clock);
        clock = ms;
      }
    }
    out.push((await decide(key, Number(cost))) ? '1' : '0');
  }
  if (redis) redis.disconnect();
  else mock.timers.reset();
  process.stdout.write(out.length ? `${out.join('\n')}\n` : '');
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(2);
});
