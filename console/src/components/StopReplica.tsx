import type { ReplicaView } from "../types.ts";
import { ChangeModal } from "./ChangeModal.tsx";
import { admin } from "../api.ts";

/** ctl replica stop --drain: one replica drained, then stopped, from wherever it is listed (a model's page, a node's card). */
export function StopReplica({ replica, onOpenedChange }: { replica: Pick<ReplicaView, "id" | "model">; onOpenedChange?: (opened: boolean) => void }) {
  return (
    <ChangeModal
      label="Stop"
      title={`Stop replica ${replica.id} (drained first); the reconciler starts another if the model wants it`}
      request={admin.stopReplica(replica.id, true)}
      follow={replica.model}
      danger
      {...(onOpenedChange ? { onOpenedChange } : {})}
    />
  );
}
