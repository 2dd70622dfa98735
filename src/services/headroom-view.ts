import type { CatalogModel } from "../catalog/index.js";
import { headroom, type DemandProfile } from "../placement/index.js";
import type { HeadroomView, NodeView, ReplicaView } from "../protocol/index.js";
import type { CatalogService } from "./catalog-service.js";
import { snapshotFromViews } from "./snapshot-from-views.js";

export interface HeadroomParts {
  readonly catalog: CatalogService;
  readonly fleet: { listNodes(): Promise<NodeView[]>; listReplicas(): Promise<ReplicaView[]> };
  /** The model's profiles as placement takes them (each card's bytes once its files were read). */
  readonly demandProfiles: (model: CatalogModel) => DemandProfile[];
  readonly gpuMemoryUtilization: number;
}

/** How many more replicas of a model fit on the fleet as it is now, and where; reads only. */
export async function headroomView(parts: HeadroomParts, name: string): Promise<HeadroomView> {
  const model = await parts.catalog.get(name);
  const [models, nodes, replicas] = await Promise.all([parts.catalog.list(), parts.fleet.listNodes(), parts.fleet.listReplicas()]);
  const room = headroom(snapshotFromViews(nodes, replicas, models), { name: model.name, modelClass: model.class, profiles: parts.demandProfiles(model) }, parts.gpuMemoryUtilization);
  return { model: model.name, profile: room.profile, more_replicas: room.moreReplicas, nodes: [...room.nodes], reasons: [...room.reasons] };
}
