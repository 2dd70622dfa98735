import { createHash, createHmac } from "node:crypto";

/**
 * The secret the server presents to a node's agent (server → agent), derived
 * rather than stored: HMAC of the node's credential hash under the server
 * key. It changes with every join (a new credential) and can be rebuilt by
 * any server holding the key, while the database alone does not yield it.
 * The agent keeps only its sha256.
 */
export function deriveControlSecret(serverKey: Buffer, credentialHash: string): string {
  return `llmgw_control_${createHmac("sha256", serverKey).update(`agent-control\0${credentialHash}`).digest("base64url")}`;
}

/** A node's control secret and the sha256 its agent keeps of it. */
export interface ControlSecret {
  readonly secret: string;
  readonly hash: string;
}

/**
 * Control secrets derived once per credential: every heartbeat needs its
 * node's secret (and its hash, to tell an agent that holds another), and an
 * HMAC and a sha256 per beat were a tenth of a beat's work in the handler at
 * 500 nodes. Bounded: the cache starts over past `limit` credentials.
 */
export class ControlSecrets {
  readonly #known = new Map<string, ControlSecret>();

  constructor(
    private readonly serverKey: Buffer,
    private readonly limit = 100_000,
  ) {}

  of(credentialHash: string): ControlSecret {
    const known = this.#known.get(credentialHash);
    if (known !== undefined) return known;
    const secret = deriveControlSecret(this.serverKey, credentialHash);
    const derived = { secret, hash: createHash("sha256").update(secret).digest("hex") };
    if (this.#known.size >= this.limit) this.#known.clear();
    this.#known.set(credentialHash, derived);
    return derived;
  }
}
