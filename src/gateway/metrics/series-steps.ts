import { seriesStepSeconds, seriesSteps, type SeriesPoint, type SeriesStepReport } from "../../protocol/index.js";

const stepMs = seriesStepSeconds * 1000;

/**
 * Latency buckets: upper bounds from 1 ms rising by √2, 36 of them up to
 * about 262 s, and one above. A percentile read from them (interpolated
 * within its bucket) is within about 20 % of the true value, close enough
 * for a chart, at 37 counts per figure per step.
 */
export const seriesBucketCount = 37;
const bucketBase = Math.SQRT2;

function bucketOf(milliseconds: number): number {
  if (!(milliseconds > 1)) return 0;
  return Math.min(seriesBucketCount - 1, Math.ceil(Math.log(milliseconds) / Math.log(bucketBase)));
}

function bucketUpper(index: number): number {
  return bucketBase ** index;
}

/** The value under which `fraction` of the counts fall, interpolated within its bucket; null with no counts. */
export function percentileOf(counts: ArrayLike<number>, fraction: number): number | null {
  let total = 0;
  for (let index = 0; index < counts.length; index += 1) total += counts[index] as number;
  if (total === 0) return null;
  const rank = fraction * total;
  let below = 0;
  for (let index = 0; index < counts.length; index += 1) {
    const count = counts[index] as number;
    if (count > 0 && below + count >= rank) {
      const lower = index === 0 ? 0 : bucketUpper(index - 1);
      const upper = index === counts.length - 1 ? lower * bucketBase : bucketUpper(index);
      return lower + (upper - lower) * ((rank - below) / count);
    }
    below += count;
  }
  return bucketUpper(counts.length - 1);
}

interface Step {
  start: number;
  requests: number;
  errors: number;
  completionTokens: number;
  latency: Uint32Array;
  ttft: Uint32Array;
}

function emptyStep(start: number): Step {
  return { start, requests: 0, errors: 0, completionTokens: 0, latency: new Uint32Array(seriesBucketCount), ttft: new Uint32Array(seriesBucketCount) };
}

function addCounts(into: Uint32Array, from: ArrayLike<number>): void {
  const length = Math.min(into.length, from.length);
  for (let index = 0; index < length; index += 1) into[index] = (into[index] as number) + (from[index] as number);
}

function increment(counts: Uint32Array, index: number): void {
  counts[index] = (counts[index] as number) + 1;
}

/** One finished request, as the gateway saw it. */
export interface SeriesSample {
  readonly model: string;
  readonly at: number;
  readonly latencyMs: number;
  /** The first byte of a streamed answer; undefined for one that was not streamed (or never began). */
  readonly ttftMs: number | undefined;
  readonly error: boolean;
  readonly completionTokens: number;
}

/**
 * Requests, errors, latency, time to first token and tokens per model in
 * 10-second steps over the last hour, in memory: what the console charts
 * without a Prometheus. Each model holds at most one hour of steps (steps
 * are made only when a request finishes in them, and older ones are dropped
 * as new ones come), so memory is bounded per model; a model that leaves the
 * catalog is dropped with `keepOnly`.
 */
export class SeriesSteps {
  readonly #byModel = new Map<string, Step[]>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  record(sample: SeriesSample): void {
    const step = this.#step(sample.model, Math.floor(sample.at / stepMs) * stepMs);
    if (!step) return;
    step.requests += 1;
    if (sample.error) step.errors += 1;
    step.completionTokens += sample.completionTokens;
    increment(step.latency, bucketOf(sample.latencyMs));
    if (sample.ttftMs !== undefined) increment(step.ttft, bucketOf(sample.ttftMs));
  }

  /** Adds what another gateway counted (its report's steps), to the same steps. */
  merge(reports: readonly SeriesStepReport[]): void {
    for (const report of reports) {
      const step = this.#step(report.model, Math.floor(report.start / stepMs) * stepMs);
      if (!step) continue;
      step.requests += report.requests;
      step.errors += report.errors;
      step.completionTokens += report.completion_tokens;
      addCounts(step.latency, report.latency);
      addCounts(step.ttft, report.ttft);
    }
  }

  /** Every step counted so far, emptied: what a standalone gateway sends to its server. */
  drain(): SeriesStepReport[] {
    const reports: SeriesStepReport[] = [];
    for (const [model, steps] of this.#byModel) {
      for (const step of steps) {
        reports.push({ model, start: step.start, requests: step.requests, errors: step.errors, completion_tokens: step.completionTokens, latency: [...step.latency], ttft: [...step.ttft] });
      }
    }
    this.#byModel.clear();
    return reports;
  }

  /** Drops the steps of models no longer served (removed from the catalog). */
  keepOnly(models: ReadonlySet<string>): void {
    for (const model of this.#byModel.keys()) if (!models.has(model)) this.#byModel.delete(model);
  }

  /** The last hour of one model (or of every model summed, without a name), oldest first, one point per step. */
  points(model?: string): SeriesPoint[] {
    const newest = Math.floor(this.#now() / stepMs) * stepMs;
    const oldest = newest - (seriesSteps - 1) * stepMs;
    const sums = new Map<number, Step>();
    const sources = model === undefined ? [...this.#byModel.values()] : [this.#byModel.get(model) ?? []];
    for (const steps of sources) {
      for (const step of steps) {
        if (step.start < oldest || step.start > newest) continue;
        let sum = sums.get(step.start);
        if (!sum) {
          sum = emptyStep(step.start);
          sums.set(step.start, sum);
        }
        sum.requests += step.requests;
        sum.errors += step.errors;
        sum.completionTokens += step.completionTokens;
        addCounts(sum.latency, step.latency);
        addCounts(sum.ttft, step.ttft);
      }
    }
    const points: SeriesPoint[] = [];
    for (let start = oldest; start <= newest; start += stepMs) {
      const step = sums.get(start) ?? emptyStep(start);
      points.push({
        t: start,
        requests_per_s: step.requests / seriesStepSeconds,
        errors_per_s: step.errors / seriesStepSeconds,
        latency_p50_ms: percentileOf(step.latency, 0.5),
        latency_p95_ms: percentileOf(step.latency, 0.95),
        ttft_p50_ms: percentileOf(step.ttft, 0.5),
        ttft_p95_ms: percentileOf(step.ttft, 0.95),
        tokens_per_s: step.completionTokens / seriesStepSeconds,
      });
    }
    return points;
  }

  /** The model's step at `start`, made when missing; undefined for a step outside the hour kept (a clock far off). */
  #step(model: string, start: number): Step | undefined {
    const newest = Math.floor(this.#now() / stepMs) * stepMs;
    if (start < newest - (seriesSteps - 1) * stepMs || start > newest + stepMs) return undefined;
    let steps = this.#byModel.get(model);
    if (!steps) {
      steps = [];
      this.#byModel.set(model, steps);
    }
    const last = steps.at(-1);
    if (last?.start === start) return last;
    // Reports may bring a step a little out of order; steps stay sorted by start.
    const found = steps.find((step) => step.start === start);
    if (found) return found;
    const step = emptyStep(start);
    steps.push(step);
    steps.sort((left, right) => left.start - right.start);
    while (steps.length > 0 && (steps[0] as Step).start < newest - (seriesSteps - 1) * stepMs) steps.shift();
    return step;
  }
}
