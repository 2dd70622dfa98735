/** The gateway's count of attempts it retried on another upstream for `model`, from its /metrics (summed over its labels). */
export async function gatewayRetries(serverUrl: string, model: string): Promise<number> {
  const text = await (await fetch(`${serverUrl}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith("llmgw_gateway_upstream_retries_total{") || !line.includes(`model="${model}"`)) continue;
    total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}
