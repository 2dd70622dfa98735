import { Button, Card, Code, Group, Image, PasswordInput, Select, SimpleGrid, Stack, Tabs, Text, TextInput, Textarea } from "@mantine/core";
import { useRef, useState } from "react";
import { errorFromResponse } from "../api.ts";
import { ErrorView } from "../components/ErrorView.tsx";
import { PageTitle, SectionTitle } from "../components/Section.tsx";
import { codeLines, cosine, gatewayHeaders, streamChat, type ChatFigures } from "../gateway-chat.ts";
import { useModels } from "../queries.ts";
import type { ModelView } from "../types.ts";

const isEmbedding = (model: ModelView) => /embed/i.test(model.name);
const isImage = (model: ModelView) => model.profiles.some((profile) => profile.engine === "comfyui");

function Reply({ label, figures, error }: { label: string; figures: ChatFigures | null; error: unknown }) {
  return (
    <Card withBorder padding="sm" data-testid={`reply-${label}`}>
      <Text fw={600} size="sm">
        {label}
      </Text>
      <ErrorView error={error} />
      <Text size="sm" style={{ whiteSpace: "pre-wrap", minHeight: 60 }} data-testid="reply-text">
        {figures?.text ?? ""}
      </Text>
      {figures && (
        <Text size="xs" mt="xs" data-testid="reply-figures">
          time to first token {figures.ttftMs === null ? "—" : `${Math.round(figures.ttftMs)} ms`} · {figures.tokensPerSecond === null ? "—" : figures.tokensPerSecond.toFixed(1)} tokens/s · prompt{" "}
          {figures.promptTokens ?? "—"} · completion {figures.completionTokens ?? "—"} tokens{figures.done ? "" : " · streaming"}
        </Text>
      )}
    </Card>
  );
}

function Chat({ models, gatewayKey }: { models: readonly ModelView[]; gatewayKey: string }) {
  const chatModels = models.filter((model) => !isEmbedding(model) && !isImage(model)).map((model) => model.name);
  const [first, setFirst] = useState<string | null>(null);
  const [second, setSecond] = useState<string | null>(null);
  const [prompt, setPrompt] = useState("Hello");
  const [replies, setReplies] = useState<Record<string, { figures: ChatFigures | null; error: unknown }>>({});
  const [showCode, setShowCode] = useState(false);
  const abort = useRef<AbortController | null>(null);
  const chosen = first ?? chatModels[0] ?? null;
  const send = () => {
    abort.current?.abort();
    abort.current = new AbortController();
    const targets = [chosen, second].filter((each): each is string => each !== null);
    setReplies(Object.fromEntries(targets.map((model, index) => [`${index}`, { figures: null, error: null }])));
    targets.forEach((model, index) => {
      streamChat(model, prompt, gatewayKey, (figures) => setReplies((previous) => ({ ...previous, [`${index}`]: { figures, error: null } })), abort.current?.signal ?? new AbortController().signal).catch(
        (error: unknown) => {
          if (error instanceof DOMException && error.name === "AbortError") return;
          setReplies((previous) => ({ ...previous, [`${index}`]: { figures: previous[`${index}`]?.figures ?? null, error } }));
        },
      );
    });
  };
  const code = chosen ? codeLines(window.location.origin, chosen, prompt) : null;
  return (
    <Stack>
      <Group grow>
        <Select label="Model" data={chatModels} value={chosen} onChange={setFirst} />
        <Select label="Second model, side by side (optional)" clearable data={chatModels} value={second} onChange={setSecond} />
      </Group>
      <Textarea label="Prompt" value={prompt} onChange={(event) => setPrompt(event.currentTarget.value)} autosize minRows={2} />
      <Group>
        <Button onClick={send} disabled={!chosen || prompt.trim() === ""}>
          Send
        </Button>
        <Button variant="default" onClick={() => setShowCode(!showCode)}>
          {showCode ? "Hide code" : "View code"}
        </Button>
      </Group>
      {showCode && code && (
        <Stack gap="xs" data-testid="code">
          <Text size="sm" fw={600}>curl</Text>
          <Code block>{code.curl}</Code>
          <Text size="sm" fw={600}>Python</Text>
          <Code block>{code.python}</Code>
          <Text size="sm" fw={600}>Node</Text>
          <Code block>{code.node}</Code>
        </Stack>
      )}
      <SimpleGrid cols={{ base: 1, md: second ? 2 : 1 }}>
        {[chosen, second].map((model, index) =>
          model && replies[`${index}`] ? <Reply key={index} label={model} figures={replies[`${index}`]?.figures ?? null} error={replies[`${index}`]?.error} /> : null,
        )}
      </SimpleGrid>
    </Stack>
  );
}

function Embeddings({ models, gatewayKey }: { models: readonly ModelView[]; gatewayKey: string }) {
  const names = models.filter(isEmbedding).map((model) => model.name);
  const [model, setModel] = useState<string | null>(null);
  const [a, setA] = useState("a cat sat on the mat");
  const [b, setB] = useState("a kitten rested on the rug");
  const [result, setResult] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const chosen = model ?? names[0] ?? null;
  const run = async () => {
    setError(null);
    setResult(null);
    try {
      const response = await fetch("/v1/embeddings", { method: "POST", headers: gatewayHeaders(gatewayKey), body: JSON.stringify({ model: chosen, input: [a, b] }) });
      if (!response.ok) throw await errorFromResponse(response);
      const answer = (await response.json()) as { data: { embedding: number[] }[] };
      setResult(cosine(answer.data[0]?.embedding ?? [], answer.data[1]?.embedding ?? []));
    } catch (caught) {
      setError(caught);
    }
  };
  return (
    <Stack>
      <Select label="Embedding model" data={names} value={chosen} onChange={setModel} />
      <TextInput label="First text" value={a} onChange={(event) => setA(event.currentTarget.value)} />
      <TextInput label="Second text" value={b} onChange={(event) => setB(event.currentTarget.value)} />
      <Button onClick={() => void run()} disabled={!chosen} w={200}>
        Compare
      </Button>
      <ErrorView error={error} />
      {result !== null && <Text data-testid="cosine">cosine similarity {result.toFixed(4)}</Text>}
    </Stack>
  );
}

function Images({ models, gatewayKey }: { models: readonly ModelView[]; gatewayKey: string }) {
  const names = models.filter(isImage).map((model) => model.name);
  const [model, setModel] = useState<string | null>(null);
  const [prompt, setPrompt] = useState("a red fox in the snow");
  const [image, setImage] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const chosen = model ?? names[0] ?? null;
  const run = async () => {
    setError(null);
    setBusy(true);
    try {
      const response = await fetch("/v1/images/generations", { method: "POST", headers: gatewayHeaders(gatewayKey), body: JSON.stringify({ model: chosen, prompt, size: "256x256", response_format: "b64_json" }) });
      if (!response.ok) throw await errorFromResponse(response);
      const answer = (await response.json()) as { data: { b64_json?: string; url?: string }[] };
      const first = answer.data[0];
      setImage(first?.b64_json ? `data:image/png;base64,${first.b64_json}` : (first?.url ?? null));
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  if (names.length === 0) return <Text size="sm">No ComfyUI model in the catalog: add one from Plan and add (the flux1-schnell preset).</Text>;
  return (
    <Stack>
      <Select label="Image model" data={names} value={chosen} onChange={setModel} />
      <TextInput label="Prompt" value={prompt} onChange={(event) => setPrompt(event.currentTarget.value)} />
      <Button onClick={() => void run()} loading={busy} w={200}>
        Generate
      </Button>
      <ErrorView error={error} />
      {image && <Image src={image} alt={`generated: ${prompt}`} w={256} h={256} />}
    </Stack>
  );
}

export default function PlaygroundPage() {
  const models = useModels();
  const [gatewayKey, setGatewayKey] = useState("");
  const list = models.data ?? [];
  return (
    <>
      <PageTitle>Playground</PageTitle>
      <PasswordInput label="Gateway key (leave empty on an open gateway)" value={gatewayKey} onChange={(event) => setGatewayKey(event.currentTarget.value)} maw={420} mb="md" />
      <Tabs defaultValue="chat">
        <Tabs.List>
          <Tabs.Tab value="chat">Chat</Tabs.Tab>
          <Tabs.Tab value="embeddings">Embeddings</Tabs.Tab>
          <Tabs.Tab value="images">Images</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="chat" pt="md">
          <Chat models={list} gatewayKey={gatewayKey} />
        </Tabs.Panel>
        <Tabs.Panel value="embeddings" pt="md">
          <SectionTitle>Two texts, one cosine</SectionTitle>
          <Embeddings models={list} gatewayKey={gatewayKey} />
        </Tabs.Panel>
        <Tabs.Panel value="images" pt="md">
          <Images models={list} gatewayKey={gatewayKey} />
        </Tabs.Panel>
      </Tabs>
    </>
  );
}
