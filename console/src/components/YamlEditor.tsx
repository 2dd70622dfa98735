import { Box, Button, Group, List, Loader, Text } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { Suspense, lazy, useMemo, useState } from "react";
import { admin, send } from "../api.ts";
import { useChangePermission } from "../session.tsx";
import { parseYaml } from "../yaml-errors.ts";
import { ErrorView } from "./ErrorView.tsx";
import { FollowModel } from "./ChangeFlow.tsx";
import { useModelCheck } from "../queries.ts";

// CodeMirror is about as large as the rest of the plan page: it loads when a candidate's YAML is opened, not with the page.
const YamlCodeEditor = lazy(() => import("./YamlCodeEditor.tsx"));

const label = "Model definition (YAML)";

/**
 * A model's YAML, checked by the server as it is typed: each pause sends the
 * entry to the add route as a dry run, so the errors are ctl's own, each put
 * on the line and column of the field it names: underlined there in the
 * editor, and listed below it as text, which a screen reader reads (an
 * underline it does not).
 */
export function YamlEditor({ initial }: { initial: string }) {
  const permission = useChangePermission();
  const [text, setText] = useState(initial);
  const [debounced] = useDebouncedValue(text, 400);
  const parsed = useMemo(() => parseYaml(debounced), [debounced]);
  const [added, setAdded] = useState<string | null>(null);
  const [addError, setAddError] = useState<unknown>(null);
  const [adding, setAdding] = useState(false);
  const check = useModelCheck(debounced, parsed.value, parsed.place, parsed.errors.length === 0 && permission.allowed);
  const placed = useMemo(() => (parsed.errors.length > 0 ? parsed.errors : check.data && !check.data.ok ? check.data.placed : []), [parsed, check.data]);
  const add = async () => {
    setAdding(true);
    setAddError(null);
    try {
      const answer = await send(admin.addModel(parseYaml(text).value));
      setAdded(answer.name);
    } catch (error) {
      setAddError(error);
    } finally {
      setAdding(false);
    }
  };
  const valid = text === debounced && parsed.errors.length === 0 && check.data?.ok === true;
  return (
    <>
      <Box data-testid="yaml-editor">
        {/* The editor's own name says the same words: hidden here so a screen reader says them once. */}
        <Text size="sm" fw={500} mb={4} aria-hidden>
          {label}
        </Text>
        <Suspense fallback={<Loader size="sm" aria-label="loading the editor" />}>
          <YamlCodeEditor initial={initial} label={label} onChange={setText} errors={placed} checkedText={debounced} />
        </Suspense>
      </Box>
      <Group gap="xs" mt="xs">
        {check.isFetching && <Loader size="xs" aria-label="checking" />}
        <Text size="sm" data-testid="yaml-status">
          {parsed.errors.length > 0
            ? "Not valid YAML"
            : check.data?.ok
              ? `The server accepts it: ${check.data.answer.changes.map((change) => change.summary).join("; ") || "it would be added"}`
              : check.data
                ? `The server refuses it: ${check.data.error.message}`
                : "Checking with the server…"}
        </Text>
      </Group>
      {placed.length > 0 && (
        <List size="sm" data-testid="yaml-errors">
          {placed.map((error) => (
            <List.Item key={`${error.line}:${error.column}:${error.message}`}>
              line {error.line}, column {error.column} ({error.where}): {error.message}
            </List.Item>
          ))}
        </List>
      )}
      {check.data && !check.data.ok && check.data.error.hint && <Text size="sm">{check.data.error.hint}</Text>}
      <Group mt="sm">
        <Button onClick={() => void add()} disabled={!permission.allowed || !valid || adding || added !== null} loading={adding}>
          Add the model
        </Button>
        {!permission.allowed && <Text size="sm">{permission.reason}</Text>}
      </Group>
      <ErrorView error={addError} />
      {added && <FollowModel model={added} />}
    </>
  );
}
