package cli

import (
	"context"
	"maps"

	"github.com/lodeworks/lode/ledger"
)

// Thread metadata keys under which lode run and chat write how a thread
// ran, so that lode resume, lode recover and lode run --thread go on with
// the same model wherever they are started. The key itself is never
// written: only the name of the variable that holds it.
const (
	modelProviderKey = "lode.model.provider"
	modelBaseURLKey  = "lode.model.base_url"
	modelNameKey     = "lode.model.name"
	modelKeyEnvKey   = "lode.model.key_env"
)

// rememberNotes is the part of the help of the commands that go on with a
// stored thread that says which model they ask.
const rememberNotes = `A thread remembers its model: lode run and chat write on it the provider, the
base URL, the model's name and the name of the key's variable (never the key).
lode resume, lode recover and lode run|chat --thread go on with them. Flags
(--provider, --base-url, --model) come first, then what the thread remembers,
then the environment (OPENAI_BASE_URL, LODE_MODEL) and lode.yaml; a flag that
changes the model is written on the thread for the next command.
`

// modelMemory is what a thread remembers of the model it ran with; an
// empty field was not written.
type modelMemory struct {
	provider, baseURL, name, keyEnv string
}

// pairs are the memory's keys with their values.
func (m modelMemory) pairs() [][2]string {
	return [][2]string{{modelProviderKey, m.provider}, {modelBaseURLKey, m.baseURL}, {modelNameKey, m.name}, {modelKeyEnvKey, m.keyEnv}}
}

// metadata is the memory as thread metadata, without empty values.
func (m modelMemory) metadata() map[string]string {
	out := map[string]string{}
	for _, p := range m.pairs() {
		if p[1] != "" {
			out[p[0]] = p[1]
		}
	}
	return out
}

// rememberedModel reads what st remembers of its model.
func rememberedModel(st ledger.State) modelMemory {
	var m modelMemory
	if st == nil {
		return m
	}
	m.provider, _ = st.Metadata(modelProviderKey)
	m.baseURL, _ = st.Metadata(modelBaseURLKey)
	m.name, _ = st.Metadata(modelNameKey)
	m.keyEnv, _ = st.Metadata(modelKeyEnvKey)
	return m
}

// rememberedInfo reads the memory from a listing's metadata.
func rememberedInfo(meta map[string]string) modelMemory {
	return modelMemory{provider: meta[modelProviderKey], baseURL: meta[modelBaseURLKey], name: meta[modelNameKey], keyEnv: meta[modelKeyEnvKey]}
}

// modelOf is the memory of the model cfg configures.
func modelOf(cfg *Config) modelMemory {
	p := cfg.Model.Provider
	if p == "" {
		p = providerOpenAI
	}
	return modelMemory{provider: p, baseURL: cfg.Model.BaseURL, name: cfg.Model.Name, keyEnv: cfg.Model.APIKeyEnv}
}

// remember writes m on st where st remembers something else; it writes
// nothing when st already remembers m.
func remember(st ledger.State, m modelMemory) error {
	for _, p := range m.pairs() {
		if p[1] == "" {
			continue
		}
		if have, _ := st.Metadata(p[0]); have == p[1] {
			continue
		}
		if err := st.SetMetadata(p[0], p[1]); err != nil {
			return err
		}
	}
	return nil
}

// applyProvider puts the thread's provider over lode.yaml's, and says
// whether the rest of the memory applies (applyModel): a thread that ran
// with another provider than --provider names gives nothing, as its URL,
// model and key belong to that provider. The flags go over the result
// (load).
func (m modelMemory) applyProvider(cfg *Config, flag string) bool {
	if m == (modelMemory{}) {
		return false
	}
	if flag != "" && m.provider != "" && flag != m.provider {
		return false
	}
	if m.provider != "" {
		cfg.Model.Provider = m.provider
	}
	return true
}

// applyModel puts the thread's URL, model and key variable over cfg (after
// the environment, before the flags).
func (m modelMemory) applyModel(cfg *Config) {
	if m.baseURL != "" {
		cfg.Model.BaseURL = m.baseURL
	}
	if m.name != "" {
		cfg.Model.Name = m.name
	}
	if m.keyEnv != "" {
		cfg.Model.APIKeyEnv = m.keyEnv
	}
}

// rememberModel writes on st the model a's configuration resolved, when
// it differs from what st remembers: a new thread, or flags that changed
// the model.
func (a *agent) rememberModel(st ledger.State) error {
	return remember(st, modelOf(a.cfg))
}

// openStored opens the stored thread id for a command that goes on with
// it (lode run and chat --thread), before the agent is built: it checks
// the caller's tenant against the thread's and lets the thread's memory
// of its model into o's configuration.
func openStored(ctx context.Context, e env, o *options, id string) (ledger.State, func(), error) {
	cfg, err := o.load(e)
	if err != nil {
		return nil, nil, err
	}
	dir := o.store
	if dir == "" {
		dir = cfg.Store
	}
	st, closeFn, err := openThread(ctx, dir, id, nil)
	if err != nil {
		return nil, nil, err
	}
	if err := checkTenant(st, o.tenant); err != nil {
		closeFn()
		return nil, nil, err
	}
	o.thread = rememberedModel(st)
	return st, closeFn, nil
}

// startThread is the thread lode run or chat talks on: stored, when
// --thread opened one (openStored), its memory of the model updated where
// flags changed it; else a new thread, created with the caller's
// identity and the model.
func (a *agent) startThread(ctx context.Context, o *options, stored ledger.State) (ledger.State, func(), error) {
	if stored != nil {
		return stored, func() {}, a.rememberModel(stored)
	}
	meta := newThreadMeta(o.identity())
	maps.Copy(meta, modelOf(a.cfg).metadata())
	return openThread(ctx, a.store, "", meta)
}
