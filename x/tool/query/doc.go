// Package query is the read-only query DSL of read tools: filter, select,
// sort and page over in-memory records (map[string]any). A query never
// changes anything, and it is total and bounded: no regex, no eval, no
// paths (a field name is a plain key), and every size has a limit.
//
// Parse reads these tool arguments (as decoded from JSON):
//
//	{
//	  "filter": {"and": [
//	    {"field": "state", "op": "eq", "value": "open"},
//	    {"field": "labels", "op": "contains", "value": "Bug", "ci": true},
//	    {"not": {"field": "priority", "op": "gt", "value": 2}}
//	  ]},
//	  "select": ["id", "title"],
//	  "sort": [{"field": "priority"}, {"field": "id", "desc": true}],
//	  "limit": 50,
//	  "offset": 0
//	}
//
// A filter is a predicate {"field", "op", "value"} or one of {"and":
// [...]}, {"or": [...]}, {"not": {...}}. Ops: eq, ne (a scalar: string,
// number, boolean or null); lt, lte, gt, gte (a number or a string); in,
// nin (an array of scalars); contains (a string: a substring of a string
// field, or an element of an array field; "ci": true ignores case); exists
// (true or false). An empty and matches every record, an empty or none.
//
// Semantics: an absent field makes every predicate false except exists
// false (a field holding null is present). eq is true only for two scalars
// of one type that are equal (numbers by value, whatever their Go type);
// ne and nin are the negations of eq and in on a present field.
// lt/lte/gt/gte order numbers with numbers and strings with strings (byte
// order); any other pair is incomparable and the predicate false, not an
// error. A record's number may be non-finite (a Go caller's, or YAML's
// .inf and .nan): ±Inf order as the largest and smallest numbers, and NaN
// is incomparable: lt, lte, gt, gte, eq and in are false for it, ne and
// nin true. A query's own operands are finite; Parse refuses NaN and ±Inf.
//
// select chooses the fields returned; when it is omitted the calling tool
// decides (DefaultSelect), or whole records come back. sort orders by keys
// in turn: within a type naturally (false before true), across types
// numbers, NaN, strings, booleans, other values; null and absent fields
// last. The order of types holds in either direction (desc reverses only
// the order within a type), so NaN always follows every other number. Ties
// keep record order, so the order is total and the same on every run. A page is limit records after
// offset, or after the position a cursor (next_cursor of a previous page,
// bound to the same filter and sort) names.
//
// Limits, each overridable with WithLimits: filter depth 8
// (DefaultMaxDepth), filter nodes 64, page size 200 (default 50), 1024
// bytes per field name, string value or cursor, 100 values per in/nin
// list, 64 select fields, 8 sort keys, offset 1,000,000. Past any of them
// Parse returns an *Error saying where and which limit. Run costs
// O(records × filter nodes) to filter, plus O(matches × log(offset+limit))
// to sort.
//
// Schema gives the JSON Schema of these arguments for a tool's tool.Tool.
package query
