import { setTimeout as sleep } from "node:timers/promises";
import { Agent, interceptors, request, type Dispatcher } from "undici";
import { withUrlCredentials } from "../../net/index.js";
import { DomainError } from "../../errors/light.js";
import type { FetchWeightsOptions } from "./fetch-options.js";

// Follows the hub's redirect to its CDN; undici strips Authorization on a cross-origin redirect.
export const redirectingDispatcher: Dispatcher = new Agent({ connectTimeout: 30_000, headersTimeout: 60_000, bodyTimeout: 120_000 }).compose(
  interceptors.redirect({ maxRedirections: 5 }),
);

export function unavailable(what: string, hint: string): DomainError {
  return new DomainError("source_unavailable", what, hint);
}

export function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Attempt numbers from 1, pausing between them (doubling, at most 30 s).
 * At least one, so a failure always has a problem to name.
 */
export async function* attempts(options: FetchWeightsOptions): AsyncGenerator<number> {
  let delay = options.retryDelayMs ?? 500;
  for (let attempt = 1; attempt <= attemptLimit(options); attempt += 1) {
    options.signal?.throwIfAborted();
    if (attempt > 1) {
      await sleep(delay, undefined, { signal: options.signal });
      delay = Math.min(delay * 2, 30_000);
    }
    yield attempt;
  }
}

export function attemptLimit(options: FetchWeightsOptions): number {
  return Math.max(1, options.maxAttempts ?? 6);
}

export async function getText(url: string, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<{ status: number; text: string; type: string }> {
  const target = withUrlCredentials(url, headers);
  const response = await request(target.url, { method: "GET", headers: target.headers, dispatcher: redirectingDispatcher, signal });
  const text = response.statusCode === 200 ? await response.body.text() : (await response.body.dump(), "");
  return { status: response.statusCode, text, type: headerText(response.headers["content-type"]) ?? "" };
}

export async function headSize(url: string, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<{ status: number; size: number | undefined }> {
  const target = withUrlCredentials(url, headers);
  const response = await request(target.url, { method: "HEAD", headers: target.headers, dispatcher: redirectingDispatcher, signal });
  await response.body.dump();
  const length = Number(headerText(response.headers["content-length"]) ?? Number.NaN);
  return { status: response.statusCode, size: Number.isFinite(length) ? length : undefined };
}
