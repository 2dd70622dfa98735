import { DomainError } from "../errors/domain-error.js";
import type { AgentState } from "./agent-state.js";

/**
 * What the node holds from the server it joined, and which server that is.
 * The credential belongs to the server's identity, not to the URL the agent
 * was given: the same server reached as https:// instead of http://, or by
 * its name instead of its address, keeps the node, its credential and its
 * replicas. The agent's state file keeps all of it.
 */
export interface NodeCredential {
  credential: string | undefined;
  /** Only the hash of the server's control secret is kept: the state file alone must not let anyone command the agent. */
  controlSecretHash: string | undefined;
  /** Where the credential was last used with the server's consent: the state file's server_url. */
  serverUrl: string;
  /** The identity of the server that gave the credential; undefined when that server told none (an earlier release). */
  serverId: string | undefined;
  /**
   * The agent was pointed at another URL than `serverUrl`: the credential is
   * sent nowhere until the server there shows the identity it was earned from.
   */
  unverified: boolean;
}

/** The credential a starting agent holds for the server at `serverUrl`, from its state file. */
export function credentialFor(previous: AgentState | undefined, serverUrl: string): NodeCredential {
  const none: NodeCredential = { credential: undefined, controlSecretHash: undefined, serverUrl, serverId: undefined, unverified: false };
  if (previous?.credential === undefined) return none;
  const held = { credential: previous.credential, controlSecretHash: previous.control_secret_hash, serverId: previous.server_id };
  if (previous.server_url === serverUrl) return { ...held, serverUrl, unverified: false };
  // Another URL: the same server under another spelling only if it proves to be, and this is known only for a server that told its identity.
  if (previous.server_id !== undefined) return { ...held, serverUrl: previous.server_url, unverified: true };
  return none;
}

/** Why a starting agent with no join token cannot go on, and what to do. */
export function noCredentialError(name: string, serverUrl: string, stateFile: string, previous: AgentState | undefined): DomainError {
  const tokenHint = "Get a join token with `llmgw ctl node token` and pass it with --token (or LLMGW_JOIN_TOKEN).";
  if (previous?.credential !== undefined && previous.server_url !== serverUrl) {
    // A state file written before servers told their identity: the credential cannot be checked against the new URL.
    return new DomainError(
      "join_refused",
      `agent ${name} has no join token, and the credential in ${stateFile} was earned from the server at ${previous.server_url}, which did not tell its identity, so the agent cannot tell whether ${serverUrl} is that server and does not send it`,
      `Point --server back at ${previous.server_url} once (the agent then learns the server's identity and may move to its new address after), or ${tokenHint.charAt(0).toLowerCase()}${tokenHint.slice(1)}`,
    );
  }
  return new DomainError("join_refused", `agent ${name} has no join token and no saved credential for ${serverUrl} in ${stateFile}`, tokenHint);
}

/** The server at the new URL is not the one the credential is for (or cannot say): what is in force, and what to do. */
export function otherServerError(name: string, serverUrl: string, held: NodeCredential, presented: string | undefined, stateFile: string): DomainError {
  const seen = presented === undefined ? "does not tell its identity (an earlier release, or not an llmgw server)" : `presents identity ${presented}`;
  return new DomainError(
    "join_refused",
    `the server at ${serverUrl} is not the server agent ${name} joined: it ${seen}, while the credential in ${stateFile} belongs to server ${held.serverId ?? "?"} at ${held.serverUrl}; the credential was not sent`,
    `To move this node to the server at ${serverUrl}, start the agent with a join token from it (--token; \`llmgw ctl node token\` there). To stay with its server, point --server back at ${held.serverUrl} (or any address of that server).`,
  );
}
