import type { FastifyReply } from "fastify";
import type { FinishReason } from "./finish-reason.js";
import type { ToolCall } from "./tool-calls.js";

/** The ids and names every chunk of one answer repeats. */
export interface AnswerHeader {
  readonly id: string;
  readonly kind: "chat" | "text";
  readonly created: number;
  readonly model: string;
}

/** Argument text per tool-call delta: clients join the pieces, as they do OpenAI's. */
const argumentPiece = 24;

/**
 * One answer as server-sent events in OpenAI's chunk shapes (chat's deltas
 * or the legacy text chunks), every choice under its own index. The response
 * starts with the first write, so an error before it is still a plain 4xx.
 */
export class AnswerStream {
  #started = false;
  readonly #announced = new Set<number>();

  constructor(
    private readonly reply: FastifyReply,
    private readonly header: AnswerHeader,
  ) {}

  get started(): boolean {
    return this.#started;
  }

  #send(payload: unknown): void {
    if (!this.#started) {
      this.#started = true;
      this.reply.hijack();
      this.reply.raw.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    }
    this.reply.raw.write(`data: ${JSON.stringify(payload)}\n\n`);
  }

  #chunk(index: number, delta: Record<string, unknown>, finishReason: FinishReason | null, logprobs: unknown = null, extra: Record<string, unknown> = {}): void {
    const { id, created, model } = this.header;
    if (this.header.kind === "chat") {
      this.#send({ id, object: "chat.completion.chunk", created, model, choices: [{ index, delta, logprobs, finish_reason: finishReason }], ...extra });
    } else {
      this.#send({ id, object: "text_completion", created, model, choices: [{ index, text: delta.content ?? "", logprobs, finish_reason: finishReason }], ...extra });
    }
  }

  /** A chat choice's first chunk carries the role, as OpenAI's does. */
  #announce(index: number): void {
    if (this.header.kind !== "chat" || this.#announced.has(index)) return;
    this.#announced.add(index);
    this.#chunk(index, { role: "assistant", content: "" }, null);
  }

  begin(index: number): void {
    this.#announce(index);
  }

  content(index: number, text: string, logprobs: unknown): void {
    this.#announce(index);
    if (text === "" && logprobs === null) return;
    this.#chunk(index, { content: text }, null, logprobs);
  }

  /** Each call: a first delta with its id, type and name, then its arguments in pieces. */
  toolCalls(index: number, calls: readonly ToolCall[]): void {
    this.#announce(index);
    calls.forEach((call, position) => {
      this.#chunk(index, { tool_calls: [{ index: position, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] }, null);
      const text = call.function.arguments;
      for (let at = 0; at < text.length; at += argumentPiece) {
        this.#chunk(index, { tool_calls: [{ index: position, function: { arguments: text.slice(at, at + argumentPiece) } }] }, null);
      }
    });
  }

  finish(index: number, reason: FinishReason, timings: unknown): void {
    this.#announce(index);
    this.#chunk(index, {}, reason, null, { timings });
  }

  usage(usage: unknown): void {
    const { id, created, model } = this.header;
    this.#send({ id, object: this.header.kind === "chat" ? "chat.completion.chunk" : "text_completion", created, model, choices: [], usage });
  }

  end(): void {
    this.reply.raw.end("data: [DONE]\n\n");
  }

  fail(body: unknown): void {
    this.#send(body);
    this.reply.raw.end();
  }
}
