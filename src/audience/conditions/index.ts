/**
 * THE condition compiler: segments, campaign audiences (FILTERED/SEGMENT) and workflow CONDITION
 * steps all use it. validate (422 paths) -> compile to SQL over contacts `c` (count, page, match one,
 * batch membership) -> or evaluate one contact in memory with the same semantics.
 */
export type { ConditionTree, ConditionGroup, ConditionFilter, FieldIssue, SegmentDef, Facts, CompileContext, Operator, Unit, FieldRef } from "./types";
export { OPERATORS, UNITS } from "./types";
export { validateCondition, normalizeCondition, MAX_DEPTH, MAX_FILTERS } from "./validate";
export { compileCondition, conditionWhere, compileFrag, fragToRaw, uuidv7Floor } from "./compile";
export { evaluateInMemory, evaluateKnown, type MemContact, type MemEvent, type EvaluateOptions } from "./evaluate";
export { conditionReferences } from "./references";
export { parseField } from "./fields";
export { resolveSegments, segmentReferenceIssues, compileContextFor, conditionWhereFor, contactMatches, contactsMatching, parseStoredCondition } from "./resolve";
export { testValue, dateText, numericText, modeOf } from "./values";
