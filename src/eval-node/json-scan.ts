/**
 * The node's budgets for public JSON bodies, checked before they are parsed (src/json-budget.ts):
 * V8's JSON.parse builds all of a body before anyone looks at it: 20 M `[` cost seconds and
 * gigabytes, and a 600,000-event batch under the byte limit holds the thread for seconds.
 * Pure.
 */
import { checkJsonBudget, type JsonBudget } from '../json-budget.js';
import { MAX_BODY_MEMBERS, MAX_CAPTURE_EVENTS, MAX_CAPTURE_MEMBERS, MAX_PAYLOAD_DEPTH } from '../limits.js';

/** `/flags` and `/decide` bodies: the envelope around person/group properties; no event list. */
export const FLAGS_BODY_BUDGET: JsonBudget = Object.freeze({ maxDepth: MAX_PAYLOAD_DEPTH, maxMembers: MAX_BODY_MEMBERS });

/** Capture bodies (once decoded): events, their properties, and the number of events. */
export const CAPTURE_BODY_BUDGET: JsonBudget = Object.freeze({ maxDepth: MAX_PAYLOAD_DEPTH, maxMembers: MAX_CAPTURE_MEMBERS, maxEvents: MAX_CAPTURE_EVENTS });
