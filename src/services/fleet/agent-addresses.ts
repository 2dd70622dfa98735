import type { Dispatcher } from "undici";
import type { ControlSecrets } from "../../auth/index.js";
import type { NodeState } from "../../fleet/index.js";
import { findNode, type StoredNode, type Store } from "../../store/index.js";
import type { AgentAddress } from "../agent-client.js";
import { nodeNotFound } from "./fleet-not-found.js";
import type { NodeStates } from "./node-states.js";

/** How the server calls a node's agent: its control URL, and the control secret the agent checks (derived from the server's key). */
export class AgentAddresses {
  constructor(
    private readonly store: Store,
    private readonly states: NodeStates,
    private readonly controlSecrets: ControlSecrets,
    private readonly dispatcher: Dispatcher | undefined,
  ) {}

  /** What the server presents to the node's agent; see auth/control-secret.ts. */
  controlSecretOf(node: Pick<StoredNode, "credential_hash">): string {
    return this.controlSecrets.of(node.credential_hash).secret;
  }

  /** The node's row, how to call its agent, and its state now; an unknown node is refused. */
  async agentOf(nodeName: string): Promise<{ node: StoredNode; address: AgentAddress; state: NodeState }> {
    const node = await findNode(this.store.db, nodeName);
    if (!node) throw nodeNotFound(nodeName);
    const state = await this.states.nodeStateByKey(node);
    return { node, address: { name: node.name, address: node.address, controlSecret: this.controlSecretOf(node), dispatcher: this.dispatcher }, state };
  }
}
