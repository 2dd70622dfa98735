import { Group, NumberInput, Select, Text, TextInput } from "@mantine/core";
import { useState } from "react";
import { admin } from "../api.ts";
import type { ModelView } from "../types.ts";
import { ChangeModal } from "./ChangeModal.tsx";
import { useModelOrigin } from "../queries.ts";


function numberOrUndefined(value: string | number): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

function ScaleAction({ model, refused }: { model: ModelView; refused: string | null }) {
  const [min, setMin] = useState<string | number>(model.scaling.min);
  const [max, setMax] = useState<string | number>(model.scaling.max);
  const [idle, setIdle] = useState(model.scaling.idle_timeout);
  const body = { min: numberOrUndefined(min), max: numberOrUndefined(max), idle_timeout: idle || undefined };
  return (
    <ChangeModal label="Scale" title={`Scale ${model.name}`} request={admin.scale(model.name, body)} follow={model.name} refusedBecause={refused}>
      <Group grow>
        <NumberInput label="min replicas" min={0} value={min} onChange={setMin} />
        <NumberInput label="max replicas" min={0} value={max} onChange={setMax} />
        <TextInput label="idle timeout" value={idle} onChange={(event) => setIdle(event.currentTarget.value)} />
      </Group>
    </ChangeModal>
  );
}

function CardsAction({ model, refused }: { model: ModelView; refused: string | null }) {
  const first = model.profiles[0];
  const [gpus, setGpus] = useState<string | number>(first?.gpus ?? 1);
  const [profile, setProfile] = useState<string | null>(first?.name ?? null);
  const body = { gpus: numberOrUndefined(gpus), ...(model.profiles.length > 1 && profile ? { profile } : {}) };
  return (
    <ChangeModal label="Cards" title={`Cards per replica of ${model.name}`} request={admin.gpus(model.name, body)} follow={model.name} refusedBecause={refused}>
      <Group grow>
        <NumberInput label="cards per replica" min={1} value={gpus} onChange={setGpus} />
        {model.profiles.length > 1 && <Select label="profile" data={model.profiles.map((each) => each.name)} value={profile} onChange={setProfile} />}
      </Group>
    </ChangeModal>
  );
}

function ContextAction({ model, refused }: { model: ModelView; refused: string | null }) {
  const [context, setContext] = useState<string | number>(model.context ?? 8192);
  const [slots, setSlots] = useState<string | number>("");
  const body = { context: numberOrUndefined(context), ...(numberOrUndefined(slots) !== undefined ? { slots: numberOrUndefined(slots) } : {}) };
  return (
    <ChangeModal label="Context" title={`Context of ${model.name}`} request={admin.context(model.name, body)} follow={model.name} refusedBecause={refused}>
      <Group grow>
        <NumberInput label="tokens per request" min={1} value={context} onChange={setContext} />
        <NumberInput label="slots (requests at once)" min={1} value={slots} onChange={setSlots} />
      </Group>
    </ChangeModal>
  );
}

function ClassAction({ model, refused }: { model: ModelView; refused: string | null }) {
  const [value, setValue] = useState<string | null>(model.class);
  return (
    <ChangeModal label="Class" title={`Class of ${model.name}`} request={value ? admin.modelClass(model.name, value) : null} follow={model.name} refusedBecause={refused}>
      <Select label="class (who yields cards to whom)" data={["critical", "standard", "opportunistic", "default"]} value={value} onChange={setValue} />
    </ChangeModal>
  );
}

function ResourcesAction({ model, refused }: { model: ModelView; refused: string | null }) {
  const first = model.profiles[0];
  const [profile, setProfile] = useState<string | null>(first?.name ?? null);
  const chosen = model.profiles.find((each) => each.name === profile) ?? first;
  const [memory, setMemory] = useState<string | number>(chosen?.memory_gb ?? "");
  const [cores, setCores] = useState<string | number>(chosen?.cpu_cores ?? "");
  const body = { ...(model.profiles.length > 1 && profile ? { profile } : {}), memory_gb: numberOrUndefined(memory), cpu_cores: numberOrUndefined(cores) };
  return (
    <ChangeModal label="Resources" title={`Host memory and cores one replica of ${model.name} reserves`} request={admin.resources(model.name, body)} follow={model.name} refusedBecause={refused}>
      <Group grow>
        {model.profiles.length > 1 && <Select label="profile" data={model.profiles.map((each) => each.name)} value={profile} onChange={setProfile} />}
        <NumberInput label="host memory (GiB)" min={0} value={memory} onChange={setMemory} />
        <NumberInput label="CPU cores" min={0} value={cores} onChange={setCores} />
      </Group>
    </ChangeModal>
  );
}

function OwnerAction({ model, refused }: { model: ModelView; refused: string | null }) {
  const [owner, setOwner] = useState(model.owner ?? "");
  return (
    <ChangeModal label="Owner" title={`Who owns ${model.name}`} request={owner.trim() ? admin.owner(model.name, owner.trim()) : null} refusedBecause={refused}>
      <TextInput label="owner (a team or a person)" value={owner} onChange={(event) => setOwner(event.currentTarget.value)} />
    </ChangeModal>
  );
}

function TargetAction({ model, refused }: { model: ModelView; refused: string | null }) {
  const [inFlight, setInFlight] = useState<string | number>(model.target?.in_flight ?? "");
  return (
    <ChangeModal label="Target" title={`When ${model.name} grows toward its max`} request={admin.target(model.name, numberOrUndefined(inFlight) ?? null)} follow={model.name} refusedBecause={refused}>
      <NumberInput label="requests in flight per replica above which a replica is added (empty: no target)" min={1} value={inFlight} onChange={setInFlight} />
    </ChangeModal>
  );
}

function FallbacksAction({ model, refused }: { model: ModelView; refused: string | null }) {
  const [text, setText] = useState(model.fallbacks.join(", "));
  const fallbacks = text.split(",").map((each) => each.trim()).filter((each) => each !== "");
  return (
    <ChangeModal label="Fallbacks" title={`Fallbacks of ${model.name}`} request={admin.fallbacks(model.name, fallbacks)} refusedBecause={refused}>
      <TextInput label="models tried next, in order (comma separated)" value={text} onChange={(event) => setText(event.currentTarget.value)} />
    </ChangeModal>
  );
}

function AdapterAction({ model, refused }: { model: ModelView; refused: string | null }) {
  const [name, setName] = useState("");
  const [source, setSource] = useState("");
  const [remove, setRemove] = useState<string | null>(null);
  return (
    <>
      <ChangeModal label="Add adapter" title={`Add a LoRA adapter to ${model.name}`} request={name && source ? admin.addAdapter(model.name, { name, source }) : null} follow={model.name} refusedBecause={refused}>
        <Group grow>
          <TextInput label="adapter name" value={name} onChange={(event) => setName(event.currentTarget.value)} />
          <TextInput label="source (URL, hf://org/name or path)" value={source} onChange={(event) => setSource(event.currentTarget.value)} />
        </Group>
      </ChangeModal>
      {model.adapters.length > 0 && (
        <ChangeModal label="Remove adapter" title={`Remove an adapter of ${model.name}`} request={remove ? admin.removeAdapter(model.name, remove) : null} follow={model.name} refusedBecause={refused}>
          <Select label="adapter" data={model.adapters.map((adapter) => adapter.name)} value={remove} onChange={setRemove} />
        </ChangeModal>
      )}
    </>
  );
}

/**
 * How replicas are replaced: a new one beside each old one (the default), or in place, for a fleet
 * with no room beside it. A Select rather than a checkbox: the Models page loads this file, and a
 * Select is already in its chunk.
 */
function InPlace({ value, onChange }: { value: boolean; onChange: (value: boolean) => void }) {
  return (
    <Select
      label="how each replica is replaced"
      data={[
        { value: "surge", label: "a new replica starts beside the old one, which drains once it is ready" },
        { value: "in-place", label: "in place: the old one stops before its replacement starts (when there is no room beside it)" },
      ]}
      value={value ? "in-place" : "surge"}
      onChange={(chosen) => onChange(chosen === "in-place")}
      allowDeselect={false}
    />
  );
}

function RestartAction({ model }: { model: ModelView }) {
  const [inPlace, setInPlace] = useState(false);
  return (
    <ChangeModal label="Restart" title={`Restart ${model.name}: new replicas beside the old, then the old drain`} request={admin.restart(model.name, { in_place: inPlace })} follow={model.name}>
      <InPlace value={inPlace} onChange={setInPlace} />
    </ChangeModal>
  );
}

function VersionActions({ model, refused }: { model: ModelView; refused: string | null }) {
  const [to, setTo] = useState("");
  const [inPlace, setInPlace] = useState(false);
  return (
    <>
      <ChangeModal label="Update" title={`Update ${model.name} to a new revision`} request={admin.update(model.name, { ...(to ? { to } : {}), in_place: inPlace })} follow={model.name} refusedBecause={refused}>
        <TextInput label="revision (empty: the newest)" value={to} onChange={(event) => setTo(event.currentTarget.value)} />
        <InPlace value={inPlace} onChange={setInPlace} />
      </ChangeModal>
      <ChangeModal label="Roll back" title={`Roll ${model.name} back to the revision before`} request={admin.rollback(model.name, { in_place: inPlace })} follow={model.name} refusedBecause={refused}>
        <InPlace value={inPlace} onChange={setInPlace} />
      </ChangeModal>
    </>
  );
}

/** What `ctl model origin` shows and sets: where the weights come from, which the update check follows. */
function OriginAction({ model, refused }: { model: ModelView; refused: string | null }) {
  const current = useModelOrigin(model.name);
  const [origin, setOrigin] = useState<string | null>(null);
  const shown = origin ?? current.data?.origin ?? "";
  const follows = current.data
    ? current.data.repository === null
      ? "It follows no hub repository, so it has no revisions to update to."
      : `It follows ${current.data.repository} at ${current.data.revision ?? "?"}.`
    : "";
  return (
    <ChangeModal label="Origin" title={`Where ${model.name}'s weights come from`} request={shown.trim() ? admin.setOrigin(model.name, shown.trim()) : null} refusedBecause={refused}>
      <Text size="sm" data-testid="origin-now">
        Now: {current.data?.origin ?? "(none set)"}. {follows}
      </Text>
      <TextInput label="origin (hf://org/name@revision, or a URL)" value={shown} onChange={(event) => setOrigin(event.currentTarget.value)} />
    </ChangeModal>
  );
}

export function CanaryActions({ model, refused, running }: { model: ModelView; refused: string | null; running: boolean }) {
  const [to, setTo] = useState("");
  const [weight, setWeight] = useState<string | number>(10);
  const [replicas, setReplicas] = useState<string | number>(1);
  const [maxErrorRate, setMaxErrorRate] = useState<string | number>(0.05);
  const [minRequests, setMinRequests] = useState<string | number>(20);
  const [window, setWindow] = useState("5m");
  if (!running) {
    return (
      <ChangeModal
        label="Start canary"
        title={`Start a canary of ${model.name}`}
        request={to ? admin.startCanary(model.name, { to, weight: numberOrUndefined(weight), replicas: numberOrUndefined(replicas) }) : null}
        follow={model.name}
        refusedBecause={refused}
      >
        <Group grow>
          <TextInput label="revision to try" value={to} onChange={(event) => setTo(event.currentTarget.value)} />
          <NumberInput label="weight (% of requests)" min={1} max={100} value={weight} onChange={setWeight} />
          <NumberInput label="replicas" min={1} value={replicas} onChange={setReplicas} />
        </Group>
      </ChangeModal>
    );
  }
  return (
    <>
      <ChangeModal
        label="Gate"
        title={`The gate of ${model.name}'s canary`}
        request={admin.canaryGate(model.name, { max_error_rate: numberOrUndefined(maxErrorRate), min_requests: numberOrUndefined(minRequests), window })}
      >
        <Group grow>
          <NumberInput label="max error rate (0 to 1)" min={0} max={1} step={0.01} decimalScale={3} value={maxErrorRate} onChange={setMaxErrorRate} />
          <NumberInput label="min requests" min={1} value={minRequests} onChange={setMinRequests} />
          <TextInput label="window" value={window} onChange={(event) => setWindow(event.currentTarget.value)} />
        </Group>
      </ChangeModal>
      <ChangeModal label="Promote" title={`Promote ${model.name}'s canary to every replica`} request={admin.promoteCanary(model.name)} follow={model.name} />
      <ChangeModal label="Abort canary" title={`Abort ${model.name}'s canary`} request={admin.abortCanary(model.name)} follow={model.name} danger />
    </>
  );
}

/** Every change ctl makes to one model, each through its dry run. */
export function ModelActions({ model, canaryRunning = false }: { model: ModelView; canaryRunning?: boolean }) {
  // The server refuses edits of a declared model (the file would undo them at the next start): say so before anyone tries.
  const refused = model.declared_in ? `${model.name} is declared in ${model.declared_in}: change it there and restart the server.` : null;
  const external = model.external !== null;
  return (
    <Group gap="xs" data-testid="model-actions">
      {!external && <ScaleAction model={model} refused={refused} />}
      {!external && <CardsAction model={model} refused={refused} />}
      {!external && <ContextAction model={model} refused={refused} />}
      {!external && <RestartAction model={model} />}
      {!external && <ResourcesAction model={model} refused={refused} />}
      {!external && <TargetAction model={model} refused={refused} />}
      <ClassAction model={model} refused={refused} />
      <OwnerAction model={model} refused={refused} />
      <FallbacksAction model={model} refused={refused} />
      {!external && <AdapterAction model={model} refused={refused} />}
      {!external && <VersionActions model={model} refused={refused} />}
      {!external && <OriginAction model={model} refused={refused} />}
      {!external && <CanaryActions model={model} refused={refused} running={canaryRunning} />}
      {!external && <ChangeModal label="Pull" title={`Fetch ${model.name}'s weights onto its nodes ahead of any replica`} request={admin.pull(model.name)} />}
      <ChangeModal label="Remove" title={`Remove ${model.name}: its replicas stop`} request={admin.removeModel(model.name)} refusedBecause={refused} danger />
    </Group>
  );
}
