import type { IncomingHttpHeaders } from "node:http";
import type { V1Response } from "../wire/v1-response.js";
import type { HistogramSeries } from "../metrics/lean-histogram.js";
import type { UpstreamController, UpstreamHandler } from "./upstream-dispatcher.js";
import type { GatewayLog } from "../wire/gateway-exchange.js";
import { SseUsageFilter, type SseDialect } from "./sse-usage-filter.js";
import { UpstreamError } from "../wire/upstream-error.js";
import { usageIn, type ReportedUsage } from "./usage-in.js";
import { headerText } from "../wire/header-text.js";
import { engineRefusalBody } from "../wire/engine-refusal.js";

/** Bytes of an engine's refusal read to rewrite it; a longer one is cut (its message is at the start). */
const refusalTextLimit = 64 * 1024;

/** Response headers passed from the engine to the client; everything else (hop-by-hop, server, engine internals) is dropped. */
const passedResponseHeaders = ["content-type", "cache-control", "retry-after"] as const;

/** Bytes of a JSON answer's end kept to read its usage from: engines put usage last. */
const usageTailLength = 2048;

export interface ProxiedOutcome {
  readonly status: number;
  readonly usage: ReportedUsage | undefined;
  /** True when the client got an error status or an answer cut short. */
  readonly failed: boolean;
}

export interface ProxiedAnswerOptions {
  readonly response: V1Response;
  readonly requestId: string;
  /** Sent as x-llmgw-model: who answered, after aliases and fallbacks. */
  readonly answeringName: string;
  /** Drop the usage-only event of a stream: the gateway asked for it, the client did not. */
  readonly dropUsageEvent: boolean;
  /** Whose events a stream carries (Anthropic's on /v1/messages passed through): where its usage and end are, and how a cut is told. */
  readonly dialect?: SseDialect;
  /** Names the upstream in errors and logs: "replica ID" or "external NAME". */
  readonly upstream: string;
  /** For an external provider: a 401/403 is the gateway's key refused, named by this variable, never passed on. */
  readonly refusedKeyVariable: string | undefined;
  /** True once the gateway is closing: the answer then asks the client to close its connection. */
  readonly closing: () => boolean;
  /** When the request arrived (performance.now()): a stream's first byte is observed into timeToFirstToken from it. */
  readonly arrivedAt: number;
  readonly timeToFirstToken: Pick<HistogramSeries, "observe">;
  readonly log: GatewayLog;
  /**
   * Called once the answer's outcome is known and before its last byte is
   * written: the answer ends when the promise it returns settles (the usage
   * is on disk then), so no client has an answer whose usage a crash can lose.
   */
  readonly beforeLastByte?: (outcome: ProxiedOutcome) => Promise<void> | void;
}

/**
 * One upstream answer, written to the client as undici hands it over: no
 * stream objects, no async iterator, no promise per chunk. Until the first
 * byte of the answer's body (a stream's first whole event) nothing reaches the
 * client, so a refused or reset connection, a 502 or 503, or a body cut before
 * then rejects
 * `done` with a retryable UpstreamError and another upstream may answer.
 * After that nothing is retried: a cut JSON answer cuts the connection (it
 * must not look whole), a cut stream ends with an SSE error event.
 */
export class ProxiedAnswer implements UpstreamHandler {
  readonly done: Promise<ProxiedOutcome>;
  #resolve!: (outcome: ProxiedOutcome) => void;
  #reject!: (error: UpstreamError) => void;
  #controller: UpstreamController | undefined;
  #status = 0;
  #headers: IncomingHttpHeaders = {};
  /** A status the client is not given (502/503, a refused provider key): the body is read and dropped, then `done` rejects. */
  #refusal: UpstreamError | undefined;
  #filter: SseUsageFilter | undefined;
  #committed = false;
  /** A JSON answer's last chunk, held until the next arrives, so a one-chunk answer leaves as one write with its headers and end. */
  #held: Buffer | undefined;
  /** The JSON answer's last chunks, at least usageTailLength bytes of them when there are: read for usage once, at the end. */
  readonly #tail: Buffer[] = [];
  #tailLength = 0;
  #clientGone = false;
  /** An engine's 4xx, read whole and sent on in OpenAI's error shape rather than the engine's own. */
  #engineRefusal: Buffer[] | undefined;
  #engineRefusalLength = 0;
  #settled = false;
  #corked = false;

  constructor(private readonly options: ProxiedAnswerOptions) {
    this.done = new Promise<ProxiedOutcome>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    options.response.once("close", this.#onClientClose);
  }

  readonly #onClientClose = (): void => {
    if (this.options.response.writableFinished) return;
    this.#clientGone = true;
    this.#controller?.abort(new Error("the client closed its connection"));
  };

  readonly #uncork = (): void => {
    this.#corked = false;
    this.options.response.uncork();
  };

  readonly #onDrain = (): void => {
    this.#controller?.resume();
  };

  onRequestStart(controller: UpstreamController): void {
    this.#controller = controller;
    if (this.#clientGone) controller.abort(new Error("the client closed its connection"));
  }

  onResponseStart(_controller: UpstreamController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.#status = statusCode;
    this.#headers = headers;
    const { upstream, refusedKeyVariable } = this.options;
    if (refusedKeyVariable !== undefined && (statusCode === 401 || statusCode === 403)) {
      this.#refusal = new UpstreamError(
        statusCode,
        true,
        upstream,
        `the provider refused the gateway's key (answered ${statusCode}); check the variable ${refusedKeyVariable} in the gateway's environment`,
      );
    } else if (UpstreamError.retryableStatus(statusCode)) {
      this.#refusal = new UpstreamError(statusCode, true, upstream, `answered ${statusCode}`);
    } else if (statusCode >= 400 && statusCode < 500) {
      this.#engineRefusal = [];
    } else if ((headerText(headers["content-type"]) ?? "").startsWith("text/event-stream")) {
      this.#filter = new SseUsageFilter(this.options.dropUsageEvent, this.options.dialect);
    }
  }

  onResponseData(controller: UpstreamController, chunk: Buffer): void {
    if (this.#refusal || this.#clientGone) return;
    if (this.#engineRefusal) {
      if (this.#engineRefusalLength < refusalTextLimit) {
        this.#engineRefusal.push(chunk);
        this.#engineRefusalLength += chunk.length;
      }
      return;
    }
    const filter = this.#filter;
    if (filter) {
      const text = filter.push(chunk);
      if (text.length > 0) {
        // A stream commits with its first whole event, not its first byte: an engine that dies inside its
        // first event has sent the client nothing, so another upstream may still answer.
        if (!this.#committed) this.#commit();
        // Corked to the end of this tick only: when the stream's end came in the same read, it leaves in the same packet.
        if (!this.#corked) {
          this.#corked = true;
          this.options.response.cork();
          process.nextTick(this.#uncork);
        }
        this.#write(controller, text);
      }
      return;
    }
    if (!this.#committed) this.#commit();
    this.#tail.push(chunk);
    this.#tailLength += chunk.length;
    while (this.#tailLength - (this.#tail[0] as Buffer).length >= usageTailLength) this.#tailLength -= (this.#tail.shift() as Buffer).length;
    if (this.#held !== undefined) this.#write(controller, this.#held);
    this.#held = chunk;
  }

  onResponseEnd(): void {
    if (this.#refusal) {
      this.#fail(this.#refusal);
      return;
    }
    if (this.#engineRefusal) {
      this.#sendEngineRefusal();
      return;
    }
    if (!this.#committed) this.#commit();
    const response = this.options.response;
    const filter = this.#filter;
    if (!filter) {
      const held = this.#held;
      this.#held = undefined;
      const ok = this.#status < 400;
      this.#succeed({ status: this.#status, usage: ok ? usageIn(this.#tailText()) : undefined, failed: !ok }, () => response.end(held));
      return;
    }
    const rest = filter.end();
    if (rest.length > 0 && !response.destroyed) response.write(rest);
    if (!filter.done) {
      this.#endCut("the engine ended the stream before it finished (no [DONE])");
      return;
    }
    this.#succeed({ status: this.#status, usage: filter.usage, failed: this.#status >= 400 }, () => response.end());
  }

  onResponseError(_controller: UpstreamController, error: Error): void {
    if (this.#refusal) {
      this.#fail(this.#refusal);
      return;
    }
    if (this.#engineRefusal) {
      // The refusal's status is known; what was read of its body is enough to say it.
      this.#sendEngineRefusal();
      return;
    }
    if (!this.#committed) {
      const when = this.#status === 0 ? "no answer" : "the answer was cut before its first byte";
      const noAnswer = this.#status === 0;
      const code = noAnswer ? (error as NodeJS.ErrnoException).code : undefined;
      this.#fail(new UpstreamError(noAnswer ? undefined : this.#status, !this.#clientGone, this.options.upstream, `${when}: ${describeConnectionError(error)}`, code));
      return;
    }
    if (!this.#filter) {
      // Headers and part of the body have left; a truncated JSON answer must not look whole, so the connection is cut.
      if (!this.#clientGone) this.options.log.warn({ upstream: this.options.upstream, err: describeConnectionError(error) }, "upstream-cut-mid-answer");
      this.#succeed({ status: this.#status, usage: undefined, failed: true }, () => this.options.response.destroy());
      return;
    }
    this.#endCut(`the engine's stream broke off: ${describeConnectionError(error)}`);
  }

  /** An engine's 4xx in OpenAI's error shape, so a client reads every /v1 error the same way whichever engine refused. */
  #sendEngineRefusal(): void {
    const text = Buffer.concat(this.#engineRefusal ?? [], this.#engineRefusalLength).toString("utf8", 0, Math.min(this.#engineRefusalLength, refusalTextLimit));
    this.#engineRefusal = undefined;
    const body = JSON.stringify(engineRefusalBody(this.#status, text, this.options.upstream, this.options.requestId));
    this.#headers = { ...this.#headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) };
    this.#filter = undefined;
    this.#commit();
    this.#succeed({ status: this.#status, usage: undefined, failed: true }, () => this.options.response.end(body));
  }

  /** The answer's status and headers, fixed once its first byte (a stream's first whole event) is here: from now on nothing is retried. */
  #commit(): void {
    this.#committed = true;
    const headers = this.#headers;
    // Name, value, name, value: no object built per answer for node to walk key by key.
    const outgoing: string[] = ["x-request-id", this.options.requestId, "x-llmgw-model", this.options.answeringName];
    for (const name of passedResponseHeaders) {
      const value = headerText(headers[name]);
      if (value !== undefined) outgoing.push(name, value);
    }
    if (this.options.closing()) outgoing.push("connection", "close");
    const length = headerText(headers["content-length"]);
    if (!this.#filter && length !== undefined) outgoing.push("content-length", length);
    this.options.response.writeHead(this.#status, outgoing);
    if (this.#filter !== undefined) this.options.timeToFirstToken.observe((performance.now() - this.options.arrivedAt) / 1000);
  }

  #tailText(): string {
    const tail = this.#tail.length === 1 ? (this.#tail[0] as Buffer) : Buffer.concat(this.#tail, this.#tailLength);
    return tail.toString("latin1", Math.max(0, tail.length - usageTailLength));
  }

  /** Writes with backpressure: a slow client pauses the upstream instead of filling memory. */
  #write(controller: UpstreamController, chunk: Buffer | string): void {
    const response = this.options.response;
    if (response.destroyed) return;
    if (!response.write(chunk)) {
      controller.pause();
      response.once("drain", this.#onDrain);
    }
  }

  #endCut(cut: string): void {
    const response = this.options.response;
    this.#succeed({ status: this.#status, usage: this.#filter?.usage, failed: true }, () => {
      if (response.destroyed) return;
      this.options.log.warn({ upstream: this.options.upstream }, `upstream-cut-mid-stream: ${cut}`);
      const message = `${cut}; the answer is incomplete (request id ${this.options.requestId})`;
      // Anthropic's clients read a named error event; OpenAI's an error in a data line.
      if (this.options.dialect === "anthropic") response.end(`event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "api_error", message: `upstream_failed: ${message}` } })}\n\n`);
      else response.end(`data: ${JSON.stringify({ error: { message, type: "server_error", param: null, code: "upstream_failed" } })}\n\n`);
    });
  }

  /** Settles with the outcome: its usage is recorded (and on disk) before `lastByte` ends the answer. */
  #succeed(outcome: ProxiedOutcome, lastByte: () => void): void {
    if (this.#settled) return;
    this.#settle();
    const recorded = this.options.beforeLastByte?.(outcome);
    if (recorded === undefined) {
      lastByte();
      this.#resolve(outcome);
      return;
    }
    // What this turn wrote stays gathered while the usage is recorded, and leaves with the end in one write:
    // uncorked at the end of the turn, a short stream went out as two writes (its events, then its end), a
    // system call more per answer, which was most of what the journal's wait cost a stream.
    const response = this.options.response;
    const holdCork = this.#corked;
    if (holdCork) response.cork();
    void recorded.then(() => {
      lastByte();
      if (holdCork) response.uncork();
      this.#resolve(outcome);
    });
  }

  #fail(error: UpstreamError): void {
    if (this.#settled) return;
    this.#settle();
    this.#reject(error);
  }

  #settle(): void {
    this.#settled = true;
    this.options.response.removeListener("close", this.#onClientClose);
    this.options.response.removeListener("drain", this.#onDrain);
  }
}

function describeConnectionError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code ? `${code} (${error.message})` : error.message;
  }
  return String(error);
}
