import type { GatewayCaller, GatewayPolicy, UsageRecord } from "./gateway-policy.js";
import { UsageBook, type UsageBookOptions } from "./usage-book.js";
import type { UsageIncrement } from "../../protocol/index.js";

const anyone: GatewayCaller = Object.freeze({ key: null, allowedModels: null });

/**
 * The name usage of an open gateway is kept under. Key names are letters,
 * digits and . _ -, so no key can be mistaken for it.
 */
export const anonymousCaller = "(anonymous)";

/**
 * `gateway: { auth: open }` with nothing kept: every caller may use every
 * model, with no limit and no usage. What tests of the request path use.
 */
export const openPolicy: GatewayPolicy = {
  authenticate: () => anyone,
  admit: () => undefined,
  record: () => undefined,
};

/**
 * `gateway: { auth: open }` (a demo on loopback; the server warns when it
 * listens anywhere else): every caller may use every model with no limit,
 * and what was served is counted by model under the anonymous caller, so
 * `llmgw ctl usage` shows it as it would a key's.
 */
export class OpenPolicy implements GatewayPolicy {
  private constructor(private readonly book: UsageBook) {}

  static async start(write: (increments: readonly UsageIncrement[]) => Promise<void>, options: UsageBookOptions = {}): Promise<OpenPolicy> {
    return new OpenPolicy(await UsageBook.start(write, options));
  }

  authenticate(): GatewayCaller {
    return anyone;
  }

  admit(): undefined {
    return undefined;
  }

  record(usage: UsageRecord): Promise<void> | undefined {
    return this.book.count(anonymousCaller, usage.model, { errors: usage.error ? 1 : 0, promptTokens: usage.promptTokens, completionTokens: usage.completionTokens });
  }

  flushUsage(): Promise<void> {
    return this.book.flush();
  }

  close(): Promise<void> {
    return this.book.close();
  }
}
