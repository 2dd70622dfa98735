/** One report per model per this long: a queue of many requests is one demand, not one per request. */
export const demandReportEveryMs = 5_000;

/**
 * Demand reports for models with no ready replica, at most one per model
 * per `everyMs`: each report is a write on the control plane, and a burst of
 * queued requests must not become a burst of writes.
 */
export function throttleDemand(report: (model: string) => void, everyMs = demandReportEveryMs, now: () => number = Date.now): (model: string) => void {
  const lastReported = new Map<string, number>();
  return (model) => {
    const at = now();
    if (at - (lastReported.get(model) ?? Number.NEGATIVE_INFINITY) < everyMs) return;
    lastReported.set(model, at);
    report(model);
  };
}
