package catalog

// ParseForBench parses the generated file, as Default does on first use.
func ParseForBench() *Catalog {
	d, err := parse(modelsJSON)
	if err != nil {
		panic(err)
	}
	return &Catalog{data: d, host: -1}
}
