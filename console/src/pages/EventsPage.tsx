import { Group, Select, Text } from "@mantine/core";
import { useEffect, useMemo, useState } from "react";
import { useSearchParams } from "react-router";
import { EventsTable } from "../components/EventsTable.tsx";
import { PageTitle } from "../components/Section.tsx";
import { useEvents } from "../queries.ts";
import { onLiveEvents } from "../stream.ts";
import type { EventView } from "../types.ts";

export default function EventsPage() {
  const events = useEvents({ limit: 500 });
  const [live, setLive] = useState<EventView[]>([]);
  const [params, setParams] = useSearchParams();
  useEffect(() => onLiveEvents((arrived) => setLive((previous) => [...previous, ...arrived].slice(-1000))), []);
  const all = useMemo(() => {
    const byId = new Map<number, EventView>();
    for (const event of [...(events.data ?? []), ...live]) byId.set(event.id, event);
    return [...byId.values()].sort((a, b) => b.id - a.id);
  }, [events.data, live]);
  const options = (pick: (event: EventView) => string | null) => [...new Set(all.map(pick).filter((value): value is string => value !== null))].sort();
  const set = (key: string, value: string | null) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value);
    else next.delete(key);
    setParams(next, { replace: true });
  };
  const shown = all.filter(
    (event) => (!params.get("model") || event.model === params.get("model")) && (!params.get("node") || event.node === params.get("node")) && (!params.get("kind") || event.kind === params.get("kind")),
  );
  return (
    <>
      <PageTitle>Events</PageTitle>
      <Group gap="sm" mb="sm" align="end">
        <Select label="Model" clearable searchable data={options((event) => event.model)} value={params.get("model")} onChange={(value) => set("model", value)} w={220} />
        <Select label="Node" clearable data={options((event) => event.node)} value={params.get("node")} onChange={(value) => set("node", value)} w={180} />
        <Select label="Kind" clearable searchable data={options((event) => event.kind)} value={params.get("kind")} onChange={(value) => set("kind", value)} w={220} />
        <Text size="sm">{shown.length} events, newest first, live</Text>
      </Group>
      <EventsTable events={shown.slice(0, 500)} />
    </>
  );
}
