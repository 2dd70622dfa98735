import type { BatteryEngine } from "./battery-server.js";

/**
 * The client battery's rows: each a (client, feature) pair that runs one
 * official client, unchanged, against a real llmgw gateway, and says whether
 * the engine behind it did what the client needs, or refused it in OpenAI's
 * (or Anthropic's) error shape naming the parameter.
 */

/** Where a row sends its requests: the gateway, a key it accepts, and the engine's models. */
export interface BatteryTarget {
  readonly engine: BatteryEngine;
  /** The gateway's base, without /v1 (Anthropic's client adds /v1 itself). */
  readonly url: string;
  readonly key: string;
  readonly chatModel: string;
  readonly embeddingModel: string;
}

/** What a row found: the feature worked, or the engine refused it, in shape, naming `param`. */
export type RowOutcome = { readonly kind: "pass" } | { readonly kind: "refused"; readonly param: string };

export interface BatteryRow {
  readonly client: string;
  readonly feature: string;
  /** Asserts what the client got; throws (an assertion or the client's own error) when it is not what the client needs. */
  run(target: BatteryTarget): Promise<void>;
  /**
   * The parameter an engine truly cannot serve for this row, which it must
   * then refuse with a 400 naming it; any other outcome than success or
   * that refusal fails the row.
   */
  readonly refusedBy?: Partial<Record<BatteryEngine, string>>;
}

/** The row's result as the table reporter reads it from the test's meta. */
export interface BatteryMeta {
  readonly client: string;
  readonly feature: string;
  readonly engine: BatteryEngine;
  outcome?: string;
}

declare module "vitest" {
  interface TaskMeta {
    battery?: BatteryMeta;
  }
}

/** The HTTP status and `param` of a client's error, whichever client threw it; undefined when it carries no HTTP status. */
export function refusalOf(error: unknown): { status: number; param: string | undefined; body: unknown } | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const fields = error as { status?: unknown; statusCode?: unknown; param?: unknown; error?: unknown; responseBody?: unknown; cause?: unknown };
  const status = typeof fields.status === "number" ? fields.status : typeof fields.statusCode === "number" ? fields.statusCode : undefined;
  if (status === undefined) return fields.cause !== undefined ? refusalOf(fields.cause) : undefined;
  let body: unknown = fields.error;
  if (typeof fields.responseBody === "string") {
    try {
      body = JSON.parse(fields.responseBody);
    } catch {
      body = fields.responseBody;
    }
  }
  const inner = (body as { error?: { param?: unknown } } | undefined)?.error ?? body;
  const param = typeof fields.param === "string" ? fields.param : typeof (inner as { param?: unknown } | undefined)?.param === "string" ? ((inner as { param: string }).param) : undefined;
  return { status, param, body };
}

/** Runs a row: success, or the one refusal its engine may give; anything else is thrown to fail the test. */
export async function runRow(row: BatteryRow, target: BatteryTarget): Promise<RowOutcome> {
  const allowed = row.refusedBy?.[target.engine];
  try {
    await row.run(target);
    return { kind: "pass" };
  } catch (error) {
    const refusal = refusalOf(error);
    if (allowed !== undefined && refusal?.status === 400 && refusal.param === allowed) return { kind: "refused", param: allowed };
    throw error;
  }
}

/** Awaits a call that must fail, and returns what it threw (a call that succeeds fails the row). */
export async function failureOf(call: Promise<unknown>): Promise<unknown> {
  const settled = await call.then(
    () => ({ failed: false as const }),
    (error: unknown) => ({ failed: true as const, error }),
  );
  if (!settled.failed) throw new Error("the call succeeded where it had to fail");
  return settled.error;
}

/** A stop sequence taken from the middle of a deterministic answer, and the text before it: what the answer with that stop must be. */
export function stopFrom(text: string): { stop: string; before: string } {
  for (let start = Math.floor(text.length / 3); start + 3 <= text.length; start += 1) {
    const stop = text.slice(start, start + 3);
    // Plain printable ASCII, so no multi-byte character is split; its first occurrence after the start, so something comes before it.
    if (!/^[\x21-\x7e][\x20-\x7e]{2}$/.test(stop)) continue;
    const at = text.indexOf(stop);
    if (at > 0) return { stop, before: text.slice(0, at) };
  }
  throw new Error(`no stop sequence of printable characters in the answer ${JSON.stringify(text)}`);
}

/** The prompt every tool row uses: it names the tool, as a user asking for it does. */
export const weatherPrompt = "Use get_weather to find the weather in Oslo.";
