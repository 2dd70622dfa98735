/** The plan folder's face: what other folders of src/ use from it. */
export { formatGiB, formatContext, parseTokenCount } from "./format.js";
