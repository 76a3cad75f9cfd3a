// Package adaptertest is what the model adapters' tests do alike: run one
// invocation and split what it yields, and record the spans WithTracer
// makes to read their attributes. Only tests import it.
package adaptertest
