/** Loopback names: only this machine can reach an address among them. */
function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * `gateway.auth: open` lets anyone who reaches the port spend the cluster's
 * capacity with no key and no limit; that is meant for a demo on loopback.
 * Anywhere else it says so loudly at every start, rather than refusing, so a
 * lab behind its own firewall can still choose it.
 */
export function openGatewayWarning(auth: "keys" | "open", host: string): string | undefined {
  if (auth !== "open" || isLoopback(host)) return undefined;
  return [
    "WARNING: the gateway is OPEN (gateway.auth: open) and listens on " + `${host}, which is not loopback.`,
    "  Anyone who can reach this address may call every model with no key and no limit, and usage is not counted per caller.",
    "  Set `gateway: { auth: keys }` in server.yaml (the default) and hand out keys with `llmgw ctl key create NAME`,",
    "  or listen on 127.0.0.1 only.",
  ].join("\n");
}
