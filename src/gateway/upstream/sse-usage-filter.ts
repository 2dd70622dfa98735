import { StringDecoder } from "node:string_decoder";
import { anthropicUsageIn, usageIn, type ReportedUsage } from "./usage-in.js";

/**
 * Reads an engine's server-sent events as they pass, event by event: keeps
 * the usage the engine reports, notices the closing `[DONE]`, and drops the
 * usage-only event when the gateway asked for it on the client's behalf
 * (`stream_options.include_usage`, so usage is counted from the engine's own
 * numbers) and the client did not.
 */
/** The events that end a Responses API stream: completed, cut at max_output_tokens, or failed. */
const responsesEnd = /^event: response\.(completed|incomplete|failed)\r?\n/;
/** The event that ends an Anthropic Messages stream. */
const messagesEnd = /^event: message_stop\r?\n/;

/** Whose events a stream carries: OpenAI's (chat, completions, Responses) or Anthropic's Messages. */
export type SseDialect = "openai" | "anthropic";

export class SseUsageFilter {
  readonly #decoder = new StringDecoder("utf8");
  #pending = "";
  #usage: ReportedUsage | undefined;
  #done = false;

  constructor(
    private readonly dropUsageEvent: boolean,
    private readonly dialect: SseDialect = "openai",
  ) {}

  get usage(): ReportedUsage | undefined {
    return this.#usage;
  }

  /** True once the engine sent `data: [DONE]` (or the Responses API's or Anthropic's last event): a stream that ends without it was cut. */
  get done(): boolean {
    return this.#done;
  }

  /** The text to send on for this chunk: whole events only (a partial one waits for the rest). */
  push(chunk: Buffer): string {
    this.#pending += this.#decoder.write(chunk);
    let output = "";
    for (;;) {
      // Events end with a blank line: "\n\n", or "\r\n\r\n" from servers that end lines with CRLF.
      let end = this.#pending.indexOf("\n\n");
      let separator = 2;
      const crlf = this.#pending.indexOf("\r\n\r\n");
      if (crlf >= 0 && (end < 0 || crlf < end)) {
        end = crlf;
        separator = 4;
      }
      if (end < 0) break;
      const event = this.#pending.slice(0, end + separator);
      this.#pending = this.#pending.slice(end + separator);
      output += this.#event(event);
    }
    return output;
  }

  /** Whatever is left when the engine's body ended. */
  end(): string {
    const rest = this.#pending + this.#decoder.end();
    this.#pending = "";
    return rest.length > 0 ? this.#event(rest) : "";
  }

  #event(event: string): string {
    if (this.dialect === "anthropic") {
      if (messagesEnd.test(event)) this.#done = true;
      else if (event.includes('"usage"')) this.#usage = anthropicUsageIn(event, this.#usage);
      return event;
    }
    if (event.startsWith("data: [DONE]")) {
      this.#done = true;
      return event;
    }
    // The Responses API ends on a named event instead, which also carries the usage.
    if (responsesEnd.test(event)) this.#done = true;
    if (!event.includes('"usage"')) return event;
    const usage = usageIn(event);
    if (usage) this.#usage = usage;
    // The usage-only event has no choices; any other event carrying usage (continuous usage) stays.
    if (this.dropUsageEvent && usage && /"choices"\s*:\s*\[\s*\]/.test(event)) return "";
    return event;
  }
}
