import { Button, Code, Group, SegmentedControl, Table, Text, TextInput } from "@mantine/core";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { admin, send } from "../api.ts";
import { ChangeModal } from "../components/ChangeModal.tsx";
import { ErrorView } from "../components/ErrorView.tsx";
import { ScrollTable } from "../components/ScrollTable.tsx";
import { ShownOnce } from "../components/ShownOnce.tsx";
import { PageTitle, SectionTitle } from "../components/Section.tsx";
import { time } from "../format.ts";
import { useChangePermission } from "../session.tsx";
import type { TokenView } from "../types.ts";
import { useTokens, queryKeys } from "../queries.ts";

/** The join token and the line that joins a machine, as `llmgw ctl node token` prints them. */
function JoinNode() {
  const permission = useChangePermission();
  const create = useMutation({ mutationFn: () => send(admin.nodeToken()) });
  // The console is served by the server the agent joins, so this page's own address is the --server to give.
  const line = create.data ? `llmgw agent --server ${window.location.origin} --token ${create.data.token}` : "";
  return (
    <>
      <Text size="sm" mb="xs">
        A join token lets any number of machines join this server as nodes. Each agent trades it for a credential of its own at its first start.
      </Text>
      <Button onClick={() => create.mutate()} disabled={!permission.allowed} loading={create.isPending} title={permission.reason ?? undefined}>
        Make a join token
      </Button>
      {!permission.allowed && <Text size="sm">{permission.reason}</Text>}
      <ErrorView error={create.error} />
      {create.data && (
        <ShownOnce title="Run this on each machine to join (the token is shown this once)" value={line} testId="join-line">
          <Text size="sm" mt="xs">
            Or set <Code>LLMGW_JOIN_TOKEN</Code> to the token and leave <Code>--token</Code> out: the token then stays out of the machine&apos;s process list.
          </Text>
        </ShownOnce>
      )}
    </>
  );
}

function CreateToken() {
  const permission = useChangePermission();
  const queryClient = useQueryClient();
  const [name, setName] = useState("");
  const [role, setRole] = useState<"read" | "admin">("read");
  const create = useMutation({
    mutationFn: () => send(admin.createToken({ name: name.trim(), role })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: queryKeys.tokens }),
  });
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        create.mutate();
      }}
    >
      <Group align="end" gap="sm">
        <TextInput label="Token name" value={name} onChange={(event) => setName(event.currentTarget.value)} required w={220} />
        <SegmentedControl value={role} onChange={(value) => setRole(value === "admin" ? "admin" : "read")} data={[{ value: "read", label: "read (may only read)" }, { value: "admin", label: "admin (may change things)" }]} aria-label="Role" />
        <Button type="submit" disabled={!permission.allowed || name.trim() === ""} loading={create.isPending} title={permission.reason ?? undefined}>
          Create token
        </Button>
      </Group>
      <ErrorView error={create.error} />
      {create.data && <ShownOnce title={`Token ${create.data.name} (${create.data.role}) created: it is shown this once`} value={create.data.token} testId="created-token" />}
    </form>
  );
}

/** Who may use the admin API, and how a machine joins: what `ctl token …` and `ctl node token` do. */
export default function AccessPage() {
  const permission = useChangePermission();
  const tokens = useTokens(permission.allowed);
  // A revoked token leaves the server's list; its row stays here, marked, so the dialog open on it shows
  // that the change applied instead of vanishing with the row. Worked out while rendering (every token
  // this page has listed, kept in a ref): a row dropped for even one render would close that dialog.
  const known = useRef(new Map<string, TokenView>());
  for (const token of tokens.data ?? []) known.current.set(token.name, token);
  const current = new Set((tokens.data ?? []).map((token) => token.name));
  const rows = [...known.current.values()].map((token) => ({ token, revoked: tokens.data !== undefined && !current.has(token.name) }));
  return (
    <>
      <PageTitle>Access</PageTitle>
      <SectionTitle>Join a node</SectionTitle>
      <JoinNode />
      <SectionTitle>Admin-API tokens</SectionTitle>
      <CreateToken />
      {!permission.allowed && <Text size="sm">Listing tokens needs an admin token: a token opens everything its role allows.</Text>}
      <ErrorView error={tokens.error} />
      <ScrollTable label="admin-API tokens" minWidth={480}>
        <Table striped data-testid="tokens-table" mt="sm">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Name</Table.Th>
              <Table.Th>Role</Table.Th>
              <Table.Th>Created</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map(({ token, revoked: gone }) => (
              <Table.Tr key={token.name} data-token={token.name}>
                <Table.Td>{token.name}</Table.Td>
                <Table.Td data-testid="token-role">{gone ? `${token.role}, revoked` : token.role}</Table.Td>
                <Table.Td>{time(token.created_at)}</Table.Td>
                <Table.Td>
                  <ChangeModal
                    label="Revoke"
                    title={`Revoke the token ${token.name}`}
                    request={admin.revokeToken(token.name)}
                    refusedBecause={gone ? "the token is revoked" : null}
                    danger
                  />
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </ScrollTable>
    </>
  );
}
