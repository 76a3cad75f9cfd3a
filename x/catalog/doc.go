// Package catalog knows models' context windows, maximum outputs and
// prices, so that a run can be costed, a spend limit kept and a history
// window sized.
//
// Default is generated from two pinned public catalogs (see
// internal/gen): Pydantic's genai-prices for prices, windows and the rules
// that take a dated or suffixed name to its model, and the models.dev
// catalog for maximum outputs. Generated says on which day. With adds or
// corrects models, by exact name, for a model the sources do not know or a
// price negotiated apart:
//
//	cat := catalog.Default().With(catalog.Model{Name: "our-llama", ContextWindow: 32768,
//		Prices: &catalog.Prices{Input: 0.2, Output: 0.6}})
//
// A Catalog serves as x/history's Windower (ContextWindow) and as
// loop.Pricer (Cost).
package catalog
