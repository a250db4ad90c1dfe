package modelapi

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// AgentOptions say how much of an agent's first run to skip.
type AgentOptions struct {
	// Trusted pre-answers the first-run dialogs (Claude Code's folder
	// trust and API key, Gemini CLI's folder trust, Codex's trust), so the
	// agent starts at its prompt. Without it the dialogs show.
	Trusted bool
}

// TestKey is the API key every agent is given: any string passes the
// scripted server.
const TestKey = "sk-test-harness-0123456789abcdefghij"

// AgentEnv prepares home (a fresh directory the run uses as $HOME) for
// agent (an adapter's name) to talk to s from workdir,
// and returns the environment the run needs (as agents-offline.md says:
// its own HOME, the base URL and a key, CI=false, no auto-update).
func (s *Server) AgentEnv(agent, home, workdir string, o AgentOptions) (map[string]string, error) {
	env := map[string]string{
		"HOME": home, "TERM": "xterm-256color", "CI": "false", "GITHUB_ACTIONS": "false",
	}
	switch agent {
	case "claude-code":
		env["ANTHROPIC_BASE_URL"] = s.URL
		env["ANTHROPIC_API_KEY"] = TestKey
		env["DISABLE_AUTOUPDATER"] = "1"
		state := map[string]any{"hasCompletedOnboarding": true}
		if o.Trusted {
			state["projects"] = map[string]any{workdir: map[string]any{"hasTrustDialogAccepted": true}}
			state["customApiKeyResponses"] = map[string]any{"approved": []string{TestKey[len(TestKey)-20:]}, "rejected": []string{}}
		}
		return env, writeJSON(filepath.Join(home, ".claude.json"), state)
	case "codex":
		env["MOCK_KEY"] = TestKey
		cfg := fmt.Sprintf(`model = "gpt-5"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "%s/v1"
env_key = "MOCK_KEY"
wire_api = "responses"
`, s.URL)
		if o.Trusted {
			cfg += fmt.Sprintf("\n[projects.%q]\ntrust_level = \"trusted\"\n", workdir)
		}
		return env, writeFile(filepath.Join(home, ".codex", "config.toml"), []byte(cfg))
	case "gemini":
		env["GEMINI_API_KEY"] = TestKey
		env["GOOGLE_GEMINI_BASE_URL"] = s.URL
		settings := map[string]any{"security": map[string]any{
			"auth": map[string]any{"selectedType": "gemini-api-key"},
		}}
		if o.Trusted {
			settings["security"].(map[string]any)["folderTrust"] = map[string]any{"enabled": false}
			// Run in the first node process, not a child relaunched for a
			// bigger heap: the parent's start is about 0.8 s of each
			// start's 3. Only trusted: a trust answer restarts Gemini CLI
			// through that parent (without it the program would exit).
			env["GEMINI_CLI_NO_RELAUNCH"] = "true"
		}
		return env, writeJSON(filepath.Join(home, ".gemini", "settings.json"), settings)
	case "qwen-code":
		env["OPENAI_API_KEY"] = TestKey
		env["OPENAI_BASE_URL"] = s.URL + "/v1"
		env["OPENAI_MODEL"] = ChatModel
		// cli.js loads every module and reads the settings, then spawns
		// itself again to run the session (heap sizing is off by
		// default; the parent restarts it after a trust change): without
		// that, the load happens once, 0.7 s of a 3 s start alone, more
		// beside other agents. Its folder trust is off by default, so no
		// answer here needs the restart.
		env["QWEN_CODE_NO_RELAUNCH"] = "true"
		// Follow-up suggestions and memory are requests with tools that
		// would take scripted turns: off.
		return env, writeJSON(filepath.Join(home, ".qwen", "settings.json"), map[string]any{
			"security": map[string]any{"auth": map[string]any{"selectedType": "openai"}},
			"general":  map[string]any{"enableAutoUpdate": false},
			"ui":       map[string]any{"enableFollowupSuggestions": false},
			"memory":   map[string]any{"enableManagedAutoMemory": false, "enableManagedAutoDream": false},
		})
	case "copilot":
		// No GitHub sign-in with a provider of its own (BYOK).
		env["COPILOT_PROVIDER_BASE_URL"] = s.URL + "/v1"
		env["COPILOT_PROVIDER_TYPE"] = "openai"
		env["COPILOT_PROVIDER_API_KEY"] = TestKey
		env["COPILOT_MODEL"] = ChatModel
		env["COPILOT_OFFLINE"] = "true"
		env["COPILOT_AUTO_UPDATE"] = "false"
		return env, nil
	case "opencode":
		// An OpenAI-compatible provider; permissions as opencode's own
		// default (the harness's approval decides).
		env["OPENCODE_DISABLE_MODELS_FETCH"] = "1"
		// Its models.dev catalog read from an empty file, not the bundled
		// snapshot of every provider's models: building that is most of
		// its start's CPU (about 2 s of 6), and the mock provider is all
		// in the config.
		models := filepath.Join(home, "opencode-models.json")
		if err := writeFile(models, []byte("{}\n")); err != nil {
			return nil, err
		}
		env["OPENCODE_MODELS_PATH"] = models
		dir := filepath.Join(home, ".config", "opencode")
		if err := opencodeDeps(dir); err != nil {
			return nil, err
		}
		return env, writeJSON(filepath.Join(dir, "opencode.json"), map[string]any{
			"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
			"provider": map[string]any{"mock": map[string]any{
				"npm": "@ai-sdk/openai-compatible", "name": "Mock",
				"options": map[string]any{"baseURL": s.URL + "/v1", "apiKey": TestKey},
				"models":  map[string]any{ChatModel: map[string]any{"name": "Test model"}},
			}},
			"model": "mock/" + ChatModel, "small_model": "mock/" + ChatModel,
		})
	case "pi":
		// A provider of its own (models.json) as the default; PI_OFFLINE
		// keeps it from downloading its helper binaries. The model has a
		// price, so that its session records carry a cost.
		env["PI_OFFLINE"] = "1"
		dir := filepath.Join(home, ".pi", "agent")
		if err := writeJSON(filepath.Join(dir, "settings.json"), map[string]any{
			"defaultProvider": "mock", "defaultModel": ChatModel,
		}); err != nil {
			return nil, err
		}
		return env, writeJSON(filepath.Join(dir, "models.json"), map[string]any{"providers": map[string]any{
			"mock": map[string]any{"baseUrl": s.URL + "/v1", "api": "openai-completions", "apiKey": TestKey,
				"models": []any{map[string]any{"id": ChatModel, "name": "Test model",
					"cost": map[string]any{"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}}},
		}})
	case "cline":
		// What `cline auth -p openai -k KEY -m MODEL -b URL` writes, and
		// global settings without auto-update or telemetry (whether it
		// asks before a tool is the harness's approval); no promo screen.
		// Its hub daemon listens on a port of its own: the default one
		// (25463) is every HOME's, and a test's Cline would find another
		// test's hub there.
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		env["CLINE_HUB_PORT"] = port
		env["CLINE_DISABLE_CLINE_PASS_NOTICE"] = "1"
		env["CLINE_NO_AUTO_UPDATE"] = "1"
		dir := filepath.Join(home, ".cline", "data", "settings")
		if err := writeJSON(filepath.Join(dir, "global-settings.json"), map[string]any{
			"autoUpdateEnabled": false, "telemetryOptOut": true,
		}); err != nil {
			return nil, err
		}
		return env, writeJSON(filepath.Join(dir, "providers.json"), map[string]any{
			"version": 1, "lastUsedProvider": "openai-compatible", "modes": map[string]any{},
			"providers": map[string]any{"openai-compatible": map[string]any{
				"settings":  map[string]any{"provider": "openai-compatible", "apiKey": TestKey, "model": ChatModel, "baseUrl": s.URL + "/v1"},
				"updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual",
			}},
		})
	}
	return nil, fmt.Errorf("modelapi: no setup for agent %q", agent)
}

// freePort is a loopback port nothing listens on now.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("modelapi: %w", err)
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}

// opencodeDeps records in opencode's config dir the one dependency it
// adds there (@opencode-ai/plugin, for the dir's own plugins) as
// installed: with node_modules and the package in package-lock.json's
// root, opencode's start skips its npm install (arborist, on the
// registry: about a second of CPU and network, offline a failure) while the
// story's first turn runs. The dir has no plugins to need it.
func opencodeDeps(dir string) error {
	deps := map[string]any{"@opencode-ai/plugin": "*"}
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o700); err != nil {
		return fmt.Errorf("modelapi: %w", err)
	}
	if err := writeJSON(filepath.Join(dir, "package.json"), map[string]any{"dependencies": deps}); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, "package-lock.json"), map[string]any{
		"lockfileVersion": 3, "requires": true, "packages": map[string]any{"": map[string]any{"dependencies": deps}},
	})
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(path, b)
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("modelapi: %w", err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("modelapi: %w", err)
	}
	return nil
}
