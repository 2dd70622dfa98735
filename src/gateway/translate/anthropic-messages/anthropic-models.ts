/** A model as GET /v1/models lists it, in OpenAI's shape. */
interface OpenAIModel {
  readonly id: string;
  readonly created: number;
}

/** Anthropic's model object: its clients' models.list() and models.retrieve() read this one. */
export function anthropicModel(model: OpenAIModel): { type: "model"; id: string; display_name: string; created_at: string } {
  return { type: "model", id: model.id, display_name: model.id, created_at: new Date(model.created * 1000).toISOString() };
}

/** The list in Anthropic's page shape: the gateway's is one page, whole. */
export function anthropicModelList(models: readonly OpenAIModel[]): Record<string, unknown> {
  const data = models.map(anthropicModel);
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}
