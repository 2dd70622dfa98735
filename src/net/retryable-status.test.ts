import { describe, expect, it } from "vitest";
import { isRetryableStatus } from "./retryable-status.js";

describe("isRetryableStatus", () => {
  it("retries timeouts, rate limits and server failures, never a refusal of the request itself", () => {
    expect([408, 429, 500, 502, 503, 504].filter(isRetryableStatus)).toEqual([408, 429, 500, 502, 503, 504]);
    expect([200, 301, 400, 401, 403, 404, 409, 413, 426].filter(isRetryableStatus)).toEqual([]);
  });
});
