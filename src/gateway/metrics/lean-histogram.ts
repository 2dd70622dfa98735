import type { Metric, Registry } from "prom-client";

/** One label value's counts: what a request observes into. */
export class HistogramSeries {
  /** Per bucket, not cumulative; the last is above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let bucket = 0;
    while (bucket < bounds.length && value > (bounds[bucket] as number)) bucket += 1;
    this.counts[bucket] = (this.counts[bucket] as number) + 1;
    this.sum += value;
    this.count += 1;
  }
}

interface HistogramValue {
  readonly labels: Record<string, string | number>;
  readonly value: number;
  readonly metricName: string;
}

/**
 * A Prometheus histogram with at most one label, read by a prom-client
 * registry like its own (the same text, the same cluster sums). prom-client's
 * Histogram hashes its label object on every observation, which on the
 * gateway's request path cost more than the observation; here a series is
 * looked up once and each observation is a few additions.
 */
export class LeanHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly #series = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: string | undefined,
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    // prom-client's types list only its own metric classes; its registry reads any object with a name, help, type and get().
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series for one value of the label (or the only series, when the histogram has no label). */
  series(labelValue = ""): HistogramSeries {
    let series = this.#series.get(labelValue);
    if (!series) {
      series = new HistogramSeries(this.bounds);
      this.#series.set(labelValue, series);
    }
    return series;
  }

  /** What prom-client's own Histogram gives its registry: cumulative buckets, then sum and count, per series. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: HistogramValue[] }> {
    const values: HistogramValue[] = [];
    for (const [labelValue, series] of this.#series) {
      const labels: Record<string, string> = this.labelName === undefined ? {} : { [this.labelName]: labelValue };
      let cumulative = 0;
      for (const [index, bound] of this.bounds.entries()) {
        cumulative += series.counts[index] as number;
        values.push({ labels: { le: bound, ...labels }, value: cumulative, metricName: `${this.name}_bucket` });
      }
      values.push({ labels: { le: "+Inf", ...labels }, value: series.count, metricName: `${this.name}_bucket` });
      values.push({ labels, value: series.sum, metricName: `${this.name}_sum` });
      values.push({ labels, value: series.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.#series.clear();
  }
}
