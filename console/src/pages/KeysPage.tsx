import { Button, Group, NumberInput, SegmentedControl, Table, Text, TextInput } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { admin, send } from "../api.ts";
import { ChangeModal } from "../components/ChangeModal.tsx";
import { ErrorView } from "../components/ErrorView.tsx";
import { PageTitle, SectionTitle } from "../components/Section.tsx";
import { time } from "../format.ts";
import { useChangePermission } from "../session.tsx";
import type { UsageView } from "../types.ts";
import { ScrollTable } from "../components/ScrollTable.tsx";
import { ShownOnce } from "../components/ShownOnce.tsx";
import { useKeys, useUsage, queryKeys } from "../queries.ts";

function CreateKey() {
  const permission = useChangePermission();
  const queryClient = useQueryClient();
  const [name, setName] = useState("");
  const [models, setModels] = useState("");
  const [rpm, setRpm] = useState<string | number>("");
  const [tpm, setTpm] = useState<string | number>("");
  const [maxInFlight, setMaxInFlight] = useState<string | number>("");
  const [expires, setExpires] = useState("");
  const create = useMutation({
    mutationFn: () =>
      send(
        admin.createKey({
          name: name.trim(),
          ...(models.trim() ? { models: models.split(",").map((each) => each.trim()).filter((each) => each !== "") } : {}),
          ...(typeof rpm === "number" ? { rpm } : {}),
          ...(typeof tpm === "number" ? { tpm } : {}),
          ...(typeof maxInFlight === "number" ? { max_in_flight: maxInFlight } : {}),
          ...(expires.trim() ? { expires: expires.trim() } : {}),
        }),
      ),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: queryKeys.keys }),
  });
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        create.mutate();
      }}
    >
      <Group align="end" gap="sm">
        <TextInput label="Name" value={name} onChange={(event) => setName(event.currentTarget.value)} required w={180} />
        <TextInput label="Allowed models (comma separated; empty: all)" value={models} onChange={(event) => setModels(event.currentTarget.value)} w={300} />
        <NumberInput label="Requests/min" value={rpm} onChange={setRpm} min={1} w={130} />
        <NumberInput label="Tokens/min" value={tpm} onChange={setTpm} min={1} w={130} />
        <NumberInput label="Max in flight (empty: server's)" value={maxInFlight} onChange={setMaxInFlight} min={1} max={1_000_000} allowDecimal={false} w={200} />
        <TextInput label="Expires (30d, or a date)" value={expires} onChange={(event) => setExpires(event.currentTarget.value)} w={170} />
        <Button type="submit" disabled={!permission.allowed || name.trim() === ""} loading={create.isPending} title={permission.reason ?? undefined}>
          Create key
        </Button>
      </Group>
      {!permission.allowed && <Text size="sm">{permission.reason}</Text>}
      <ErrorView error={create.error} />
      {create.data && <ShownOnce title={`Key ${create.data.name} created: it is shown this once`} value={create.data.key} testId="created-key" />}
    </form>
  );
}

function csv(rows: readonly UsageView[]): string {
  const header = "key,model,requests,errors,prompt_tokens,completion_tokens,first_minute,last_minute";
  const escape = (value: string | number) => (typeof value === "number" ? String(value) : `"${value.replace(/"/g, '""')}"`);
  return [header, ...rows.map((row) => [row.key, row.model, row.requests, row.errors, row.prompt_tokens, row.completion_tokens, row.first_minute, row.last_minute].map(escape).join(","))].join("\n");
}

function Usage() {
  const [since, setSince] = useState("24h");
  const usage = useUsage(since);
  const rows = usage.data?.usage ?? [];
  const download = () => {
    const url = URL.createObjectURL(new Blob([csv(rows)], { type: "text/csv" }));
    const link = document.createElement("a");
    link.href = url;
    link.download = `llmgw-usage-${since}.csv`;
    link.click();
    URL.revokeObjectURL(url);
  };
  return (
    <>
      <Group gap="sm" mb="sm">
        <SegmentedControl value={since} onChange={setSince} data={["1h", "24h", "7d", "30d"]} aria-label="Usage period" />
        <Button size="xs" variant="default" onClick={download} disabled={rows.length === 0}>
          Export CSV
        </Button>
      </Group>
      <ErrorView error={usage.error} />
      <ScrollTable label="usage" minWidth={640}>
        <Table striped data-testid="usage-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Key</Table.Th>
              <Table.Th>Model</Table.Th>
              <Table.Th>Requests</Table.Th>
              <Table.Th>Errors</Table.Th>
              <Table.Th>Prompt tokens</Table.Th>
              <Table.Th>Completion tokens</Table.Th>
              <Table.Th>Last used</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((row) => (
              <Table.Tr key={`${row.key}/${row.model}`}>
                <Table.Td>{row.key}</Table.Td>
                <Table.Td>{row.model}</Table.Td>
                <Table.Td>{row.requests}</Table.Td>
                <Table.Td>{row.errors}</Table.Td>
                <Table.Td>{row.prompt_tokens}</Table.Td>
                <Table.Td>{row.completion_tokens}</Table.Td>
                <Table.Td>{row.last_minute}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </ScrollTable>
      {rows.length === 0 && <Text size="sm">No use in the last {since}.</Text>}
    </>
  );
}

export default function KeysPage() {
  const permission = useChangePermission();
  const keys = useKeys(permission.allowed);
  return (
    <>
      <PageTitle>Keys and usage</PageTitle>
      <SectionTitle>Create a gateway key</SectionTitle>
      <CreateKey />
      <SectionTitle>Keys</SectionTitle>
      {!permission.allowed && <Text size="sm">Listing keys needs an admin token: a key spends the organisation's capacity.</Text>}
      <ErrorView error={keys.error} />
      <ScrollTable label="gateway keys" minWidth={640}>
        <Table striped data-testid="keys-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>State</Table.Th>
              <Table.Th>Models</Table.Th>
              <Table.Th>Limits</Table.Th>
              <Table.Th>Max in flight</Table.Th>
              <Table.Th>Expires</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {(keys.data ?? []).map((key) => (
              <Table.Tr key={key.name} data-key={key.name}>
                <Table.Td>{key.name}</Table.Td>
                <Table.Td data-testid="key-state">{key.state}</Table.Td>
                <Table.Td>{key.models?.join(", ") ?? "all"}</Table.Td>
                <Table.Td>
                  {key.rpm ?? "∞"} req/min · {key.tpm ?? "∞"} tok/min
                </Table.Td>
                <Table.Td data-testid="key-max-in-flight" title={key.max_in_flight === null ? "limits.requests_per_key in server.yaml (256 unless set)" : "this key's own cap"}>
                  {key.max_in_flight ?? "server default"}
                </Table.Td>
                <Table.Td>{key.expires_at ? time(key.expires_at) : "never"}</Table.Td>
                <Table.Td>
                  {/* Kept mounted once revoked (disabled, saying why), so the open dialog shows its applied state instead of vanishing with the button. */}
                  <ChangeModal
                    label="Revoke"
                    title={`Revoke the key ${key.name}`}
                    request={admin.revokeKey(key.name)}
                    refusedBecause={key.state === "active" ? null : `the key is ${key.state}`}
                    danger
                  />
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </ScrollTable>
      <SectionTitle>Usage</SectionTitle>
      <Usage />
    </>
  );
}
