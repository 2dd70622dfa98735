// Bounds of the limits, apart from their schemas: the CLI's help states them at every start, without loading zod.

/**
 * The most requests in flight one key may be allowed, by limits.requests_per_key
 * or by the key's own max_in_flight: more than a port holds connections
 * (limits.connections' own bound), so a larger cap could never be reached.
 */
export const mostRequestsPerKey = 1_000_000;
