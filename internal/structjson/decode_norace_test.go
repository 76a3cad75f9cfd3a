//go:build !race

package structjson_test

const decodeUnderRace = false
