import { connect, type Socket } from "node:net";
import type { IncomingHttpHeaders } from "node:http";
import { Http1ResponseReader, type ResponseReaderEvents } from "./http1-response-reader.js";
import { isHeaderValue } from "../wire/header-name.js";
import type { UpstreamController, UpstreamDispatcher, UpstreamHandler, UpstreamRequest } from "./upstream-dispatcher.js";

export interface Http1PoolOptions {
  /** Connections open at most; further requests wait for one in order. */
  readonly connections?: number;
  /** A connection not open by then fails its request (retryably: nothing was sent). */
  readonly connectTimeoutMs?: number;
  /**
   * How long an idle connection is kept for the next request. Under the
   * engines' own keep-alive (uvicorn's and llama.cpp's are 5 s), so the
   * gateway closes an idle connection before the engine does; an engine's
   * `keep-alive: timeout=N` shortens it further.
   */
  readonly idleTimeoutMs?: number;
}

/** An error with the code node's own socket errors carry, so logs and retries read it alike. */
function connectionError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

/**
 * Plain-HTTP/1.1 connections to one upstream origin (an engine on the
 * cluster's network), kept alive and reused, most recently used first.
 *
 * Why not undici, which the gateway uses for https: on the one path every
 * request takes, undici's general machinery (its request object, handler
 * wrappers, the wasm parser's callbacks, timers per request) cost about a
 * quarter of the gateway's CPU per request in `npm run bench`'s profile; this
 * does only what the gateway needs: one POST with a known length, an answer
 * framed by length, chunks or close (Http1ResponseReader), backpressure and
 * abort.
 *
 * One thing it does that a general client must not: a request written on a
 * kept-alive connection that the engine had just closed (the two crossed; no
 * byte of an answer came back) is sent once more on a new connection, since
 * the engine never read it. Any other failure is the handler's to judge.
 */
export class Http1Pool implements UpstreamDispatcher {
  readonly #host: string;
  readonly #port: number;
  readonly #hostHeader: string;
  readonly #connections: number;
  readonly #connectTimeoutMs: number;
  readonly #idleTimeoutMs: number;
  /** Idle connections, the most recently used last. */
  readonly #idle: Connection[] = [];
  readonly #waiting: Exchange[] = [];
  #open = 0;
  #active = 0;
  /** Set once close() is called: no new request is taken. */
  #closing: Promise<void> | undefined;
  #closed: (() => void) | undefined;
  readonly #sweep: NodeJS.Timeout;
  /** Every connection's reads, one at a time: each is handled before the next can land. */
  readonly #readBuffer = Buffer.allocUnsafe(64 * 1024);

  constructor(origin: URL, options: Http1PoolOptions = {}) {
    if (origin.protocol !== "http:") throw new Error(`Http1Pool speaks plain HTTP only; ${origin.origin} needs another client`);
    this.#host = origin.hostname.replace(/^\[(.*)\]$/, "$1");
    this.#port = origin.port === "" ? 80 : Number(origin.port);
    this.#hostHeader = origin.host;
    this.#connections = options.connections ?? 128;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 4_000;
    // One timer for the pool, not one per connection: idle connections past their time are closed here.
    this.#sweep = setInterval(() => this.#closeExpired(Date.now()), 1_000).unref();
  }

  dispatch(request: UpstreamRequest, handler: UpstreamHandler): void {
    let head = "";
    let refused: Error | undefined;
    try {
      head = requestHead(request, this.#hostHeader);
    } catch (error) {
      refused = error as Error;
    }
    const exchange = new Exchange(this, head, request.body, handler);
    this.#active += 1;
    handler.onRequestStart(exchange);
    if (exchange.over) return;
    if (refused) {
      exchange.fail(refused);
      return;
    }
    if (this.#closing !== undefined) {
      exchange.fail(connectionError("UPSTREAM_POOL_CLOSED", "the gateway is closing its connections to this upstream"));
      return;
    }
    this.#start(exchange);
  }

  close(): Promise<void> {
    // Every caller waits for the same close.
    this.#closing ??= (async () => {
      if (this.#active > 0) await new Promise<void>((resolve) => (this.#closed = resolve));
      clearInterval(this.#sweep);
      for (const connection of this.#idle.splice(0)) connection.socket.destroy();
    })();
    return this.#closing;
  }

  /** @internal An exchange is over (answered, failed or aborted). */
  exchangeOver(exchange: Exchange): void {
    if (exchange.queued) {
      const at = this.#waiting.indexOf(exchange);
      if (at >= 0) this.#waiting.splice(at, 1);
      exchange.queued = false;
    }
    this.#active -= 1;
    if (this.#active === 0 && this.#closed) this.#closed();
  }

  /** @internal A connection carried its answer whole: kept for the next request, or closed. */
  release(connection: Connection, keepForMs: number): void {
    const next = this.#waiting.shift();
    if (next) {
      next.queued = false;
      connection.send(next, true);
      return;
    }
    if (this.#closing !== undefined || keepForMs <= 0) {
      connection.socket.destroy();
      return;
    }
    connection.expiresAt = Date.now() + Math.min(keepForMs, this.#idleTimeoutMs);
    this.#idle.push(connection);
  }

  /** @internal A connection closed, for whatever reason. */
  connectionClosed(connection: Connection): void {
    this.#open -= 1;
    const at = this.#idle.indexOf(connection);
    if (at >= 0) this.#idle.splice(at, 1);
    const next = this.#waiting.shift();
    if (next) {
      next.queued = false;
      this.#start(next);
    }
  }

  /** @internal Sends the exchange on a new connection, past the idle ones: the retry of a request that crossed a closing one. */
  sendFresh(exchange: Exchange): void {
    this.#openConnection().send(exchange, false);
  }

  #start(exchange: Exchange): void {
    const now = Date.now();
    for (;;) {
      const idle = this.#idle.pop();
      if (!idle) break;
      if (idle.expiresAt <= now) {
        idle.socket.destroy();
        continue;
      }
      idle.send(exchange, true);
      return;
    }
    if (this.#open < this.#connections) {
      this.#openConnection().send(exchange, false);
      return;
    }
    exchange.queued = true;
    this.#waiting.push(exchange);
  }

  #openConnection(): Connection {
    this.#open += 1;
    let connection: Connection | undefined;
    // Reads land in the pool's one buffer, with no stream or allocation per read; what is kept is copied out (Exchange.onBody).
    const socket = connect({
      host: this.#host,
      port: this.#port,
      noDelay: true,
      onread: {
        buffer: this.#readBuffer,
        callback: (size: number, buffer: Uint8Array) => {
          connection?.read(buffer as Buffer, size);
          // Pausing is the exchange's (socket.pause() stops reading); nothing to ask for here.
          return true;
        },
      },
    });
    connection = new Connection(this, socket, this.#connectTimeoutMs);
    return connection;
  }

  #closeExpired(now: number): void {
    // Oldest first: once one is still fresh, every later one is too.
    while (this.#idle.length > 0 && (this.#idle[0] as Connection).expiresAt <= now) (this.#idle.shift() as Connection).socket.destroy();
  }
}

/** Bodies up to this size leave in one write with the head; larger ones beside it. */
const inlineBodyBytes = 16 * 1024;


function requestHead(request: UpstreamRequest, host: string): string {
  // A line break in a header would end the head early and smuggle a second request.
  if (/[\s]/.test(request.path)) throw new Error(`the upstream path ${JSON.stringify(request.path)} has white space or a line break`);
  let head = `${request.method} ${request.path} HTTP/1.1\r\nhost: ${host}\r\n`;
  for (const name in request.headers) {
    const value = request.headers[name] as string;
    if (!isHeaderValue(value)) throw new Error(`the upstream header ${name} has a line break or a control character in its value`);
    head += `${name}: ${value}\r\n`;
  }
  return `${head}content-length: ${request.body.length}\r\n\r\n`;
}

/** Seconds in a `keep-alive: timeout=N` header, as milliseconds less one second of margin; undefined when absent. */
function keepAliveHintMs(headers: IncomingHttpHeaders): number | undefined {
  const hint = headers["keep-alive"];
  if (typeof hint !== "string") return undefined;
  const match = /timeout=(\d+)/i.exec(hint);
  return match ? Number(match[1]) * 1000 - 1000 : undefined;
}

/** One socket to the upstream, carrying one exchange at a time. */
class Connection {
  exchange: Exchange | undefined;
  expiresAt = 0;
  #error: Error | undefined;
  #connectTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: Http1Pool,
    readonly socket: Socket,
    connectTimeoutMs: number,
  ) {
    this.#connectTimer = setTimeout(() => socket.destroy(connectionError("UPSTREAM_CONNECT_TIMEOUT", `could not connect within ${connectTimeoutMs} ms`)), connectTimeoutMs);
    socket.once("connect", () => {
      clearTimeout(this.#connectTimer);
      this.#connectTimer = undefined;
    });
    socket.on("error", (error: Error) => (this.#error ??= error));
    socket.on("close", () => this.#onClose());
  }

  send(exchange: Exchange, reused: boolean): void {
    this.exchange = exchange;
    exchange.attach(this, reused);
    const socket = this.socket;
    const body = exchange.body;
    // One write, one system call: latin1 maps each byte to one character and back, so the body's bytes leave unchanged.
    if (body.length <= inlineBodyBytes) {
      socket.write(exchange.head + body.toString("latin1"), "latin1");
      return;
    }
    socket.cork();
    socket.write(exchange.head, "latin1");
    socket.write(body);
    socket.uncork();
  }

  /** The exchange gave up mid-answer: the rest of the answer would be in the way of the next, so the connection goes. */
  drop(): void {
    this.exchange = undefined;
    this.socket.destroy();
  }

  /** Bytes read into the pool's read buffer: valid only until this returns. */
  read(buffer: Buffer, size: number): void {
    const chunk = buffer.subarray(0, size);
    const exchange = this.exchange;
    if (!exchange) {
      // Bytes nobody asked for, on an idle connection: it cannot be trusted with the next request.
      this.socket.destroy();
      return;
    }
    exchange.gotBytes = true;
    try {
      exchange.reader.push(chunk);
    } catch (error) {
      this.drop();
      exchange.fail(error as Error);
      return;
    }
    if (exchange.ended && this.exchange === exchange) this.#complete(exchange);
  }

  #complete(exchange: Exchange): void {
    this.exchange = undefined;
    const socket = this.socket;
    if (socket.isPaused()) socket.resume();
    if (exchange.reader.reusable) this.pool.release(this, exchange.keepForMs);
    else socket.destroy();
    exchange.finish();
  }

  #onClose(): void {
    clearTimeout(this.#connectTimer);
    this.pool.connectionClosed(this);
    const exchange = this.exchange;
    this.exchange = undefined;
    if (!exchange || exchange.over) return;
    if (exchange.reader.close() === "ended") {
      exchange.finish();
      return;
    }
    if (exchange.reused && !exchange.gotBytes && !exchange.retried) {
      exchange.retried = true;
      this.pool.sendFresh(exchange);
      return;
    }
    const error = this.#error ?? connectionError("ECONNRESET", exchange.gotBytes ? "the upstream closed the connection before its answer was complete" : "the upstream closed the connection without answering");
    exchange.fail(error);
  }
}

/** One request through the pool: its handler's controller, and the reader of its answer. */
class Exchange implements UpstreamController, ResponseReaderEvents {
  reader: Http1ResponseReader;
  connection: Connection | undefined;
  queued = false;
  reused = false;
  retried = false;
  gotBytes = false;
  /** The reader saw the whole answer; the connection decides what comes next. */
  ended = false;
  /** The handler has had its last call (end or error). */
  over = false;
  keepForMs = Number.POSITIVE_INFINITY;
  #paused = false;

  constructor(
    private readonly pool: Http1Pool,
    readonly head: string,
    readonly body: Buffer,
    private readonly handler: UpstreamHandler,
  ) {
    this.reader = new Http1ResponseReader(this);
  }

  attach(connection: Connection, reused: boolean): void {
    this.connection = connection;
    this.reused = reused;
    this.gotBytes = false;
    this.reader = new Http1ResponseReader(this);
    if (this.#paused) connection.socket.pause();
  }

  pause(): void {
    this.#paused = true;
    this.connection?.socket.pause();
  }

  resume(): void {
    this.#paused = false;
    this.connection?.socket.resume();
  }

  abort(reason: Error): void {
    if (this.over) return;
    const connection = this.connection;
    if (connection && connection.exchange === this) connection.drop();
    this.fail(reason);
  }

  onHead(status: number, headers: IncomingHttpHeaders): void {
    const hint = keepAliveHintMs(headers);
    if (hint !== undefined) this.keepForMs = hint;
    this.handler.onResponseStart(this, status, headers);
  }

  onBody(chunk: Buffer): void {
    // The chunk lies in the pool's read buffer, which the next read overwrites: the handler gets bytes of its own.
    if (!this.over) this.handler.onResponseData(this, Buffer.from(chunk));
  }

  onEnd(): void {
    this.ended = true;
  }

  finish(): void {
    if (this.over) return;
    this.over = true;
    this.pool.exchangeOver(this);
    this.handler.onResponseEnd(this);
  }

  fail(error: Error): void {
    if (this.over) return;
    this.over = true;
    this.pool.exchangeOver(this);
    this.handler.onResponseError(this, error);
  }
}
