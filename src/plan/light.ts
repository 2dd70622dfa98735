/** The plan folder's light face: the number formats the CLI prints with, loading none of the planner's model-file readers. */
export { formatGiB, formatContext, parseTokenCount } from "./format.js";
