/**
 * The sampling parameters' ranges as vLLM checks them (its SamplingParams and
 * chat request validators), in its words, so that a client sees from the
 * simulation the 400 a real engine gives. Types are checked earlier, by the
 * request schemas.
 */

export interface SamplingParameters {
  readonly n?: number | null | undefined;
  readonly temperature?: number | null | undefined;
  readonly top_p?: number | null | undefined;
  readonly top_k?: number | null | undefined;
  readonly min_p?: number | null | undefined;
  readonly presence_penalty?: number | null | undefined;
  readonly frequency_penalty?: number | null | undefined;
  readonly repetition_penalty?: number | null | undefined;
  readonly stop?: string | readonly string[] | null | undefined;
  /** The chat API's: whether log probabilities were asked for, and how many alternatives. */
  readonly logprobs?: boolean | number | null | undefined;
  readonly top_logprobs?: number | null | undefined;
}

export interface SamplingRefusal {
  readonly message: string;
  readonly param: string;
}

/** The first parameter out of vLLM's range, with its message; undefined when all are in range. */
export function samplingRefusal(body: SamplingParameters): SamplingRefusal | undefined {
  const { temperature, top_p: topP, top_k: topK, min_p: minP, repetition_penalty: repetition } = body;
  if (temperature != null) {
    if (!Number.isFinite(temperature)) return { message: `temperature must be a finite number, got ${temperature}.`, param: "temperature" };
    if (temperature < 0) return { message: `temperature must be non-negative, got ${temperature}.`, param: "temperature" };
    if (temperature > 2) return { message: `temperature must be in [0, 2], got ${temperature}.`, param: "temperature" };
  }
  if (topP != null && !(topP > 0 && topP <= 1)) return { message: `top_p must be in (0, 1], got ${topP}.`, param: "top_p" };
  if (topK != null && topK < -1) return { message: `top_k must be 0 (disable), or at least 1, got ${topK}.`, param: "top_k" };
  if (minP != null && !(minP >= 0 && minP <= 1)) return { message: `min_p must be in [0, 1], got ${minP}.`, param: "min_p" };
  for (const param of ["presence_penalty", "frequency_penalty"] as const) {
    const value = body[param];
    if (value != null && !(value >= -2 && value <= 2)) return { message: `${param} must be in [-2, 2], got ${value}.`, param };
  }
  if (repetition != null && !(Number.isFinite(repetition) && repetition > 0)) return { message: `repetition_penalty must be greater than zero, got ${repetition}.`, param: "repetition_penalty" };
  const stops = typeof body.stop === "string" ? [body.stop] : (body.stop ?? []);
  if (stops.some((stop) => stop === "")) return { message: "stop cannot contain an empty string.", param: "stop" };
  if (body.top_logprobs != null && body.top_logprobs > 0 && body.logprobs !== true && typeof body.logprobs !== "number") {
    return { message: "when using `top_logprobs`, `logprobs` must be set to true.", param: "top_logprobs" };
  }
  // Greedy decoding has one answer only: n copies of it would be the same.
  if (temperature === 0 && (body.n ?? 1) > 1) return { message: `n must be 1 when using greedy sampling, got ${body.n}.`, param: "n" };
  return undefined;
}

/** The request's stop sequences as a list. */
export function stopSequences(stop: string | readonly string[] | null | undefined): readonly string[] {
  return typeof stop === "string" ? [stop] : (stop ?? []);
}
