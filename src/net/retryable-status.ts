/**
 * Whether an HTTP answer may go away by asking again later: the peer timed
 * out waiting for us (408), asks us to slow down (429), or failed on its own
 * side (5xx). Any other 4xx is about the request, and repeating it repeats
 * the refusal. One rule for every client of llmgw that retries (the weights
 * fetcher, the agent's calls to its server), so they cannot drift apart.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}
