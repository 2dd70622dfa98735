import { dryRunAnswer, type Change, type DryRunAnswer, type NodeView } from "../protocol/index.js";
import type { ChangeToPreview } from "../reconcile/index.js";
import { type Store, insertEvents, setNodeControl } from "../store/index.js";

export type NodeControlAction = "cordon" | "uncordon" | "drain";

const controlOf: Record<NodeControlAction, { readonly cordoned: boolean; readonly draining: boolean }> = {
  cordon: { cordoned: true, draining: false },
  uncordon: { cordoned: false, draining: false },
  drain: { cordoned: true, draining: true },
};

const meaningOf: Record<NodeControlAction, string> = {
  cordon: "nothing new is placed there; its replicas keep serving",
  uncordon: "replicas may be placed there again",
  drain: "nothing new is placed there, and its replicas move elsewhere",
};

export interface NodeControlParts {
  readonly store: Store;
  readonly fleet: { getNode(name: string): Promise<NodeView> };
  readonly preview: (change: ChangeToPreview) => Promise<Change[]>;
  /** Tells the reconciler to look again: the control is stored on the node, its next pass acts on it. */
  readonly wake: () => void;
  readonly now?: () => number;
}

/** Cordons, uncordons or drains a node: stored on the node, acted on by the reconciler's next pass. */
export class NodeControlService {
  constructor(private readonly parts: NodeControlParts) {}

  /** Answers the node as it is after the change; with `dryRun`, as it would be and what the passes would move. */
  async control(name: string, action: NodeControlAction, actor: string, dryRun: boolean): Promise<NodeView | DryRunAnswer<NodeView>> {
    const node = await this.parts.fleet.getNode(name);
    const change = controlOf[action];
    if (dryRun) {
      const control: Change = { kind: `node-${action}`, summary: `${action} node ${name}: ${meaningOf[action]}`, node: name };
      return dryRunAnswer({ ...node, ...change }, [control, ...(await this.parts.preview({ node: { name, ...change } }))]);
    }
    const at = new Date((this.parts.now ?? Date.now)()).toISOString();
    await setNodeControl(this.parts.store.db, { node: name, cordoned: change.cordoned ? 1 : 0, draining: change.draining ? 1 : 0, updated_at: at });
    const kind = change.draining ? "node-draining" : change.cordoned ? "node-cordoned" : "node-uncordoned";
    const what = change.draining ? "drains it: its replicas move elsewhere" : change.cordoned ? "cordons it: nothing new is placed there" : "uncordons it: replicas may be placed there again";
    await insertEvents(this.parts.store.db, [{ at, kind, model: null, replica: null, node: name, message: `${actor} ${what}` }]);
    this.parts.wake();
    return await this.parts.fleet.getNode(name);
  }
}
