import type { OutgoingHttpHeaders } from "node:http";
import type { Socket } from "node:net";
import type { V1Response } from "../wire/v1-response.js";
import { SseEvents } from "./sse-events.js";

/**
 * Turns the chat completion answers the gateway's request path writes into
 * another API's answers, as they are written: a JSON answer (or an error in
 * OpenAI's shape) whole at its end, a stream event by event.
 */
export interface AnswerTranslator {
  /** A chat completion (status below 400) as the other API's answer. */
  json(text: string): string;
  /** An error answer in OpenAI's shape as the other API's error. */
  error(status: number, text: string): string;
  /** One event of a chat completion stream (its data, `[DONE]` included) as the text to send; absent, a stream passes as written (it is in the client's API already). */
  event?(data: string): string;
  /** Whatever the other API sends after the stream's last event. */
  end(): string;
}

/**
 * A V1Response in front of the client's own: the gateway's request path
 * (attempts, retries, fallbacks, usage) writes a chat completion answer to it
 * unchanged, and the client gets it translated. A stream's head leaves at
 * once and each event as it comes, so nothing is held back; a JSON answer is
 * read whole (its length changes) and leaves at its end.
 */
export class TranslatingResponse implements V1Response {
  #status = 0;
  #headers: string[] = [];
  #headWritten = false;
  #events: SseEvents | undefined;
  /** A stream passed as written: only errors outside a stream are translated. */
  #rawStream = false;
  readonly #body: Buffer[] = [];

  constructor(
    private readonly client: V1Response,
    private readonly translator: AnswerTranslator,
  ) {}

  get socket(): Socket | null {
    return this.client.socket;
  }
  get headersSent(): boolean {
    return this.#headWritten || this.client.headersSent;
  }
  get destroyed(): boolean {
    return this.client.destroyed;
  }
  get writableFinished(): boolean {
    return this.client.writableFinished;
  }
  get shouldKeepAlive(): boolean {
    return this.client.shouldKeepAlive;
  }
  set shouldKeepAlive(value: boolean) {
    this.client.shouldKeepAlive = value;
  }

  setHeader(name: string, value: string): unknown {
    return this.client.setHeader(name, value);
  }

  writeHead(status: number, headers: OutgoingHttpHeaders | string[]): unknown {
    this.#headWritten = true;
    this.#status = status;
    // The length changes with the translation: a JSON answer gets its own at the end, a stream none.
    this.#headers = pairs(flatHeaders(headers)).filter(([name]) => name.toLowerCase() !== "content-length").flat();
    const type = headerValue(this.#headers, "content-type") ?? "";
    if (status < 400 && type.startsWith("text/event-stream")) {
      if (this.translator.event === undefined) this.#rawStream = true;
      else this.#events = new SseEvents();
      return this.client.writeHead(status, this.#headers);
    }
    return this;
  }

  write(chunk: Buffer | string): boolean {
    if (this.#rawStream) return this.client.write(chunk);
    if (this.#events === undefined) {
      this.#body.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
      return true;
    }
    const event = this.translator.event?.bind(this.translator) ?? ((data: string) => data);
    const text = this.#events.push(chunk).map(event).join("");
    return text.length === 0 ? true : this.client.write(text);
  }

  end(chunk?: Buffer | string): unknown {
    if (this.#rawStream) return this.client.end(chunk);
    if (this.#events !== undefined) {
      const event = this.translator.event?.bind(this.translator) ?? ((data: string) => data);
      const events = chunk === undefined ? [] : this.#events.push(chunk);
      const text = [...events, ...this.#events.end()].map(event).join("") + this.translator.end();
      return this.client.end(text);
    }
    if (chunk !== undefined) this.#body.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
    const received = Buffer.concat(this.#body).toString("utf8");
    let text: string;
    try {
      text = this.#status >= 400 ? this.translator.error(this.#status, received) : this.translator.json(received);
    } catch (error) {
      // An engine's answer that is not a chat completion: the client is told so, in its API's error shape, rather than given half a translation.
      this.#status = 502;
      const problem = { error: { message: `the engine's answer could not be read as a chat completion (${error instanceof Error ? error.message : String(error)})`, type: "server_error", param: null, code: "upstream_failed" } };
      text = this.translator.error(502, JSON.stringify(problem));
    }
    const headers = pairs(this.#headers).filter(([name]) => name.toLowerCase() !== "content-type").flat();
    this.client.writeHead(this.#status, [...headers, "content-type", "application/json", "content-length", String(Buffer.byteLength(text))]);
    return this.client.end(text);
  }

  cork(): void {
    this.client.cork();
  }
  uncork(): void {
    this.client.uncork();
  }
  destroy(): unknown {
    return this.client.destroy();
  }
  once(event: "close" | "finish" | "drain", listener: () => void): unknown {
    return this.client.once(event, listener);
  }
  removeListener(event: "close" | "finish" | "drain", listener: () => void): unknown {
    return this.client.removeListener(event, listener);
  }
}

function flatHeaders(headers: OutgoingHttpHeaders | string[]): string[] {
  if (Array.isArray(headers)) return headers;
  const flat: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) flat.push(name, String(one));
  }
  return flat;
}

function pairs(flat: readonly string[]): [string, string][] {
  const result: [string, string][] = [];
  for (let index = 0; index + 1 < flat.length; index += 2) result.push([flat[index] as string, flat[index + 1] as string]);
  return result;
}

function headerValue(flat: readonly string[], name: string): string | undefined {
  return pairs(flat).find(([candidate]) => candidate.toLowerCase() === name)?.[1];
}
