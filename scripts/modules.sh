# scripts/modules.sh: what scripts/tidy, scripts/release, scripts/releasecheck and
# scripts/footprint share about this repository's modules. Sourced, not run.
#
# The modules require each other at real versions: a pseudo-version of a commit of this
# repository on main, a release version (vX.Y.Z) in a release commit. No go.mod has a replace
# directive; in a checkout, the go.work makes every module use its siblings' directories. To
# resolve those versions without the network, the go command is pointed at a git repository on
# this machine (use_git_repo): it fetches the modules from it as it would from GitHub, so that the
# module zips and go.sum hashes are those a module proxy serves for the same commits and tags.

base=github.com/reconcilekit/reconcile

# module_dirs ROOT: the directory of each module of the go.work in ROOT, relative to ROOT ("."
# for the root module), in the go.work's order.
module_dirs() {
  (cd "$1" && GOWORK="$1/go.work" go work edit -json) |
    sed -n 's/^[[:space:]]*"DiskPath": "\(.*\)",\{0,1\}$/\1/p' | sed 's#^\./##; s#^$#.#'
}

# module_path GOMOD: the module path a go.mod file declares.
module_path() {
  sed -n 's/^module[[:space:]]\{1,\}"\{0,1\}\([^"[:space:]]*\).*/\1/p' "$1"
}

# sibling_requires GOMOD: the paths of this repository's modules that GOMOD requires.
sibling_requires() {
  go mod edit -json "$1" | awk -v base="$base" '
    /"Require": \[/ { inreq = 1; next }
    inreq && /^\t\]/ { inreq = 0 }
    inreq && /"Path":/ { p = $2; gsub(/[",]/, "", p); if (p == base || index(p, base "/") == 1) print p }'
}

# load_modules ROOT: fills the arrays mod_dirs (relative directories) and mod_paths (module
# paths), index for index, and the map dir_of[path], for the modules of the go.work in ROOT; then
# mod_order: the indexes, each module after the siblings it requires (fails on a cycle).
load_modules() {
  local root="$1" d i j done_count progress ok
  mod_dirs=()
  mod_paths=()
  declare -gA dir_of=()
  while IFS= read -r d; do
    mod_dirs+=("$d")
    mod_paths+=("$(module_path "$root/$d/go.mod")")
    dir_of[${mod_paths[-1]}]="$d"
  done < <(module_dirs "$root")

  declare -gA mod_requires=()
  for i in "${!mod_dirs[@]}"; do
    mod_requires[$i]="$(sibling_requires "$root/${mod_dirs[$i]}/go.mod" | tr '\n' ' ')"
  done

  mod_order=()
  declare -A placed=()
  done_count=0
  while [ "$done_count" -lt "${#mod_dirs[@]}" ]; do
    progress=false
    for i in "${!mod_dirs[@]}"; do
      [ -n "${placed[$i]:-}" ] && continue
      ok=true
      for j in ${mod_requires[$i]}; do
        [ -n "${dir_of[$j]:-}" ] || continue # a module not in the go.work: tidy will say
        [ -n "${placed[$(mod_index "$j")]:-}" ] || { ok=false; break; }
      done
      if $ok; then
        placed[$i]=1
        mod_order+=("$i")
        done_count=$((done_count + 1))
        progress=true
      fi
    done
    $progress || { echo "modules.sh: the modules' requirements on each other form a cycle" >&2; return 1; }
  done
}

# mod_index PATH: the index in mod_paths of module PATH.
mod_index() {
  local i
  for i in "${!mod_paths[@]}"; do [ "${mod_paths[$i]}" = "$1" ] && { echo "$i"; return; }; done
  return 1
}

# owner PKG: the module (of load_modules) that holds package PKG: the longest prefix.
owner() {
  local best="" m
  for m in "${mod_paths[@]}"; do
    case "$1" in "$m" | "$m"/*) [ ${#m} -gt ${#best} ] && best="$m" ;; esac
  done
  echo "$best"
}

# tag_of DIR VERSION: the git tag of the module in DIR at VERSION.
tag_of() {
  if [ "$1" = . ]; then echo "$2"; else echo "$1/$2"; fi
}

# use_git_repo REPO: from now on, the go command fetches this repository's modules straight from
# the git repository REPO (a path on this machine), never from a proxy or the checksum database;
# other modules as GOPROXY says. It also leaves the go.work out: each module is resolved as a
# consumer sees it.
use_git_repo() {
  local n="${GIT_CONFIG_COUNT:-0}"
  export GOWORK=off
  export GOPRIVATE="$base${GOPRIVATE:+,$GOPRIVATE}"
  export "GIT_CONFIG_KEY_$n=url.file://$1.insteadOf"
  export "GIT_CONFIG_VALUE_$n=https://$base"
  export GIT_CONFIG_COUNT=$((n + 1))
}

# version_at PATH REV: the version (a pseudo-version, or the tag naming REV) of module PATH at
# the commit REV, as the go command computes it (after use_git_repo).
version_at() {
  local dir rc=0
  dir="$(mktemp -d)"
  (cd "$dir" && go list -m -f '{{.Version}}' "$1@$2") || rc=$?
  rmdir "$dir"
  return "$rc"
}
