import { protocolRefusal } from "../../protocol/index.js";

/** Refuses a message naming another protocol version; one without a version is refused by its schema, as any malformed body. */
export function refuseOtherProtocol(body: unknown): void {
  const refusal = protocolRefusal(body, {
    side: "server",
    place: "llmgw server",
    hint: "Run an agent of the server's llmgw release (npm install -g llmgw@<server version>) and start it again.",
  });
  if (refusal) throw refusal;
}
