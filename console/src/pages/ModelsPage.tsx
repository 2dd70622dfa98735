import { Anchor, Button, Card, Group, Select, Table, Text, TextInput, UnstyledButton } from "@mantine/core";
import { createColumnHelper, createSortedRowModel, rowSortingFeature, sortFn_alphanumeric, sortFn_basic, tableFeatures, useTable } from "@tanstack/react-table";
import { useVirtualizer } from "@tanstack/react-virtual";
import { useMemo, useRef, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { ErrorView } from "../components/ErrorView.tsx";
import { ModelActions } from "../components/ModelActions.tsx";
import { PageTitle } from "../components/Section.tsx";
import { modelStateText, replicasByModel, type StateGroup } from "../model-state.ts";
import { useModels, useReplicas } from "../queries.ts";
import type { ModelView } from "../types.ts";

interface Row {
  readonly model: ModelView;
  readonly name: string;
  readonly state: string;
  readonly group: StateGroup;
  readonly class: string;
  readonly owner: string;
  readonly engine: string;
  readonly cards: number;
  readonly ready: number;
}

const features = tableFeatures({ rowSortingFeature, sortedRowModel: createSortedRowModel(), sortFns: { alphanumeric: sortFn_alphanumeric, basic: sortFn_basic } });
const column = createColumnHelper<typeof features, Row>();
const columns = column.columns([
  column.accessor("name", { header: "Model", sortFn: "alphanumeric" }),
  column.accessor("state", { header: "State", sortFn: "alphanumeric" }),
  column.accessor("class", { header: "Class", sortFn: "alphanumeric" }),
  column.accessor("owner", { header: "Owner", sortFn: "alphanumeric" }),
  column.accessor("engine", { header: "Engine", sortFn: "alphanumeric" }),
  column.accessor("cards", { header: "Cards", sortFn: "basic" }),
]);

const rowHeight = 44;

function distinct(rows: readonly Row[], pick: (row: Row) => string): string[] {
  return [...new Set(rows.map(pick))].filter((value) => value !== "").sort();
}

export default function ModelsPage() {
  const models = useModels();
  const replicas = useReplicas();
  // Filters live in the address, so a filtered list reloads and can be shared.
  const [params, setParams] = useSearchParams();
  const [selected, setSelected] = useState<string | null>(null);
  const filter = (key: string) => params.get(key) ?? "";
  const setFilter = (key: string, value: string | null) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value);
    else next.delete(key);
    setParams(next, { replace: true });
  };

  const rows = useMemo<Row[]>(() => {
    const byModel = replicasByModel(replicas.data ?? []);
    return (models.data ?? []).map((model) => {
      const state = modelStateText(model, byModel.get(model.name) ?? []);
      return {
        model,
        name: model.name,
        state: state.text,
        group: state.group,
        class: model.class,
        owner: model.owner ?? "",
        engine: model.external ? "external" : [...new Set(model.profiles.map((profile) => profile.engine))].join(", "),
        cards: model.profiles[0]?.gpus ?? 0,
        ready: model.replicas.ready,
      };
    });
  }, [models.data, replicas.data]);
  const search = filter("q").toLowerCase();
  const shown = useMemo(
    () =>
      rows.filter(
        (row) =>
          (search === "" || row.name.toLowerCase().includes(search)) &&
          (filter("state") === "" || row.group === filter("state")) &&
          (filter("class") === "" || row.class === filter("class")) &&
          (filter("owner") === "" || row.owner === filter("owner")) &&
          (filter("engine") === "" || row.engine.split(", ").includes(filter("engine"))),
      ),
    [rows, params, search],
  );
  const table = useTable({ features, columns, data: shown, getRowId: (row) => row.name });
  const tableRows = table.getRowModel().rows;
  const scroller = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({ count: tableRows.length, getScrollElement: () => scroller.current, estimateSize: () => rowHeight, overscan: 12 });
  const items = virtualizer.getVirtualItems();
  const before = items[0]?.start ?? 0;
  const after = virtualizer.getTotalSize() - (items.at(-1)?.end ?? 0);
  const selectedModel = rows.find((row) => row.name === selected)?.model;

  return (
    <>
      <PageTitle>Models</PageTitle>
      <ErrorView error={models.error} title="Could not read the models" />
      <Group gap="sm" align="end" mb="sm">
        <TextInput label="Search" placeholder="name" value={filter("q")} onChange={(event) => setFilter("q", event.currentTarget.value)} w={200} />
        <Select label="State" clearable data={["serving", "starting", "on-demand", "not-placed", "failed", "stopped", "external"]} value={filter("state") || null} onChange={(value) => setFilter("state", value)} w={150} />
        <Select label="Class" clearable data={["critical", "standard", "opportunistic"]} value={filter("class") || null} onChange={(value) => setFilter("class", value)} w={150} />
        <Select label="Owner" clearable data={distinct(rows, (row) => row.owner)} value={filter("owner") || null} onChange={(value) => setFilter("owner", value)} w={150} />
        <Select label="Engine" clearable data={distinct(rows, (row) => row.engine).flatMap((each) => each.split(", ")).filter((each, index, all) => all.indexOf(each) === index)} value={filter("engine") || null} onChange={(value) => setFilter("engine", value)} w={150} />
        <Text size="sm" data-testid="models-count">
          {shown.length} of {rows.length} models
        </Text>
      </Group>
      {selectedModel && (
        <Card withBorder mb="sm" data-testid="selected-model">
          <Group justify="space-between" mb="xs">
            <Text fw={600}>
              {selectedModel.name}
              {selectedModel.declared_in ? ` (declared in ${selectedModel.declared_in})` : ""}
            </Text>
            <Button size="xs" variant="default" onClick={() => setSelected(null)}>
              Close
            </Button>
          </Group>
          <ModelActions model={selectedModel} />
        </Card>
      )}
      <div ref={scroller} style={{ height: "calc(100vh - 260px)", minHeight: 320, overflow: "auto" }} tabIndex={0} aria-label="Models table" role="region">
        <Table stickyHeader striped highlightOnHover style={{ minWidth: 860 }} data-testid="models-table">
          <Table.Thead>
            {table.getHeaderGroups().map((group) => (
              <Table.Tr key={group.id}>
                {group.headers.map((header) => {
                  const sorted = header.column.getIsSorted();
                  return (
                    <Table.Th key={header.id} aria-sort={sorted === "asc" ? "ascending" : sorted === "desc" ? "descending" : "none"}>
                      <UnstyledButton onClick={header.column.getToggleSortingHandler()} fw={600} fz="sm">
                        {String(header.column.columnDef.header)} {sorted === "asc" ? "▲" : sorted === "desc" ? "▼" : ""}
                      </UnstyledButton>
                    </Table.Th>
                  );
                })}
                <Table.Th>Actions</Table.Th>
              </Table.Tr>
            ))}
          </Table.Thead>
          <Table.Tbody>
            {before > 0 && (
              <tr aria-hidden>
                <td style={{ height: before, padding: 0 }} colSpan={7} />
              </tr>
            )}
            {items.map((item) => {
              const row = tableRows[item.index];
              if (!row) return null;
              const data = row.original;
              return (
                <Table.Tr key={row.id} style={{ height: rowHeight }} data-model={data.name}>
                  <Table.Td>
                    <Anchor component={Link} to={`/models/${encodeURIComponent(data.name)}`}>
                      {data.name}
                    </Anchor>
                  </Table.Td>
                  <Table.Td data-testid="model-state" style={{ maxWidth: 380 }}>
                    <Text size="sm" lineClamp={2} title={data.state}>
                      {data.state}
                    </Text>
                  </Table.Td>
                  <Table.Td>{data.class}</Table.Td>
                  <Table.Td>{data.owner || "—"}</Table.Td>
                  <Table.Td>{data.engine}</Table.Td>
                  <Table.Td>{data.cards || "CPU"}</Table.Td>
                  <Table.Td>
                    <Button size="compact-xs" variant="default" onClick={() => setSelected(data.name)} aria-label={`Actions for ${data.name}`}>
                      Actions
                    </Button>
                  </Table.Td>
                </Table.Tr>
              );
            })}
            {after > 0 && (
              <tr aria-hidden>
                <td style={{ height: after, padding: 0 }} colSpan={7} />
              </tr>
            )}
          </Table.Tbody>
        </Table>
      </div>
    </>
  );
}
