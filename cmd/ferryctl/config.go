package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// defaultEndpoint is where make run serves.
const defaultEndpoint = "http://127.0.0.1:8080"

// configFile is $XDG_CONFIG_HOME/ferry/config (~/.config/ferry/config): YAML, because it is edited by hand too.
//
//	default-profile: dev
//	profiles:
//	  dev:
//	    endpoint: http://127.0.0.1:8080
//	    token: eyJ…
type configFile struct {
	DefaultProfile string             `yaml:"default-profile,omitempty"`
	Profiles       map[string]profile `yaml:"profiles,omitempty"`
}

type profile struct {
	Endpoint string `yaml:"endpoint,omitempty"`
	Token    string `yaml:"token,omitempty"`
}

// settings are what a command calls ferry with.
type settings struct {
	endpoint, token string
}

func configPath() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", usagef("finding the configuration file: %v", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "ferry", "config"), nil
}

func loadConfig() (configFile, string, error) {
	path, err := configPath()
	if err != nil {
		return configFile{}, "", err
	}
	var c configFile
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, path, nil
	}
	if err != nil {
		return c, path, usagef("reading %s: %v", path, err)
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		return c, path, usagef("reading %s: %v", path, err)
	}
	return c, path, nil
}

func saveConfig(path string, c configFile) error {
	var buf bytes.Buffer
	buf.WriteString("# ferryctl profiles (ferryctl config set-profile). It holds tokens: keep it private.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	// The file holds tokens: only its owner may read it.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// profileName is the profile a command uses: --profile, else FERRY_PROFILE, else the file's default profile,
// else one named "default". named says whether it was asked for by name (then it must exist).
func (a *app) profileName(c configFile) (name string, named bool) {
	switch {
	case a.profile != "":
		return a.profile, true
	case os.Getenv("FERRY_PROFILE") != "":
		return os.Getenv("FERRY_PROFILE"), true
	case c.DefaultProfile != "":
		return c.DefaultProfile, false
	}
	return "default", false
}

// resolve settles the endpoint and the token, each from the first of: its flag, the profile named by --profile,
// its environment variable, the profile named by FERRY_PROFILE or the default profile. An explicit --profile
// wins over the environment because it was asked for on this command line.
func (a *app) resolve() (settings, error) {
	c, path, err := loadConfig()
	if err != nil {
		return settings{}, err
	}
	name, named := a.profileName(c)
	p, ok := c.Profiles[name]
	if named && !ok {
		return settings{}, usagef("no profile %q in %s (ferryctl config set-profile %s --endpoint … --token …)", name, path, name)
	}
	pick := func(flag, env string, fromProfile string) string {
		switch {
		case flag != "":
			return flag
		case a.profile != "" && fromProfile != "":
			return fromProfile
		case os.Getenv(env) != "":
			return os.Getenv(env)
		}
		return fromProfile
	}
	s := settings{
		endpoint: pick(a.endpoint, "FERRY_ENDPOINT", p.Endpoint),
		token:    pick(a.token, "FERRY_TOKEN", p.Token),
	}
	if s.endpoint == "" {
		s.endpoint = defaultEndpoint
	}
	s.endpoint = strings.TrimSuffix(s.endpoint, "/")
	if s.token == "" {
		return s, usagef("no token: pass --token, set FERRY_TOKEN, or save a profile (ferryctl config set-profile NAME --endpoint URL --token TOKEN); make run prints one")
	}
	return s, nil
}

// tenancyOf reads the tenancy claim of a ferry token, without verifying it (the server does): the root
// compartment that --compartment-id defaults to.
func tenancyOf(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Tenancy string `json:"tenancy"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	return claims.Tenancy
}

func (a *app) configCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Manage the profiles of the configuration file"}
	var makeDefault bool
	set := &cobra.Command{
		Use:   "set-profile NAME --endpoint URL --token TOKEN",
		Short: "Create or update a profile (the first one becomes the default)",
		Long: `Create or update a profile of $XDG_CONFIG_HOME/ferry/config (~/.config/ferry/config) from the global
--endpoint and --token flags; a flag left out keeps the profile's value. The first profile saved becomes the
default profile; --default makes this one the default.`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, path, err := loadConfig()
			if err != nil {
				return err
			}
			if c.Profiles == nil {
				c.Profiles = map[string]profile{}
			}
			p := c.Profiles[args[0]]
			if cmd.Flags().Changed("endpoint") {
				p.Endpoint = a.endpoint
			}
			if cmd.Flags().Changed("token") {
				p.Token = a.token
			}
			c.Profiles[args[0]] = p
			if makeDefault || c.DefaultProfile == "" {
				c.DefaultProfile = args[0]
			}
			if err := saveConfig(path, c); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "profile %q saved in %s\n", args[0], path)
			return nil
		},
	}
	set.Flags().BoolVar(&makeDefault, "default", false, "make this profile the default")

	use := &cobra.Command{
		Use:               "use-profile NAME",
		Short:             "Make a profile the default",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: a.completeProfiles,
		RunE: func(_ *cobra.Command, args []string) error {
			c, path, err := loadConfig()
			if err != nil {
				return err
			}
			if _, ok := c.Profiles[args[0]]; !ok {
				return usagef("no profile %q in %s", args[0], path)
			}
			c.DefaultProfile = args[0]
			return saveConfig(path, c)
		},
	}
	del := &cobra.Command{
		Use:               "delete-profile NAME",
		Short:             "Delete a profile",
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: a.completeProfiles,
		RunE: func(_ *cobra.Command, args []string) error {
			c, path, err := loadConfig()
			if err != nil {
				return err
			}
			if _, ok := c.Profiles[args[0]]; !ok {
				return usagef("no profile %q in %s", args[0], path)
			}
			delete(c.Profiles, args[0])
			if c.DefaultProfile == args[0] {
				c.DefaultProfile = ""
			}
			return saveConfig(path, c)
		},
	}
	list := &cobra.Command{
		Use:   "list-profiles",
		Short: "List the profiles (without their tokens)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			c, _, err := loadConfig()
			if err != nil {
				return err
			}
			type row struct {
				Name      string `json:"name"`
				Endpoint  string `json:"endpoint"`
				IsDefault bool   `json:"isDefault"`
			}
			out := struct {
				Items []row `json:"items"`
			}{Items: []row{}}
			names := make([]string, 0, len(c.Profiles))
			for n := range c.Profiles {
				names = append(names, n)
			}
			slices.Sort(names)
			for _, n := range names {
				out.Items = append(out.Items, row{n, c.Profiles[n].Endpoint, n == c.DefaultProfile})
			}
			body, err := json.Marshal(out)
			if err != nil {
				return err
			}
			return a.emit(profilesView, body)
		},
	}
	cmd.AddCommand(set, use, list, del)
	return cmd
}

func (a *app) completeProfiles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	c, _, err := loadConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names := make([]string, 0, len(c.Profiles))
	for n := range c.Profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, cobra.ShellCompDirectiveNoFileComp
}
