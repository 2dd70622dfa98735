/**
 * The wait before a model whose engines keep failing is started again: the
 * initial wait, doubled per failure in a row, capped. Without it a model
 * whose engine dies at load (a bad checkpoint, a driver mismatch) would be
 * restarted every pass, filling logs and holding cards others could use.
 */
export function backoffMs(failures: number, initialMs: number, maxMs: number): number {
  if (failures <= 0) return 0;
  // 2 ** 30 already passes any cap; the exponent is bounded so the arithmetic stays exact.
  return Math.min(maxMs, initialMs * 2 ** Math.min(failures - 1, 30));
}
