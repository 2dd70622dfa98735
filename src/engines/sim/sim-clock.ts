export const sleep = (milliseconds: number) =>
  new Promise<void>((resolve) => {
    if (milliseconds > 0 && Number.isFinite(milliseconds)) setTimeout(resolve, milliseconds);
    // Still yield, so streamed chunks leave one by one even at infinite speed.
    else setImmediate(resolve);
  });

/** Waits until `deadline` (a performance.now() time); a late caller just yields, so small steps do not add up to timer granularity. */
export const sleepUntil = (deadline: number) => sleep(deadline - performance.now());
