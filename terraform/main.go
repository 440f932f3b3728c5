// Command terraform-provider-ferry is ferry's Terraform provider (source address ferry-mq/ferry). Terraform starts
// it; make terraform-provider builds it into bin/ with a CLI configuration that points Terraform at the build.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/ferry-mq/ferry/terraform/provider"
)

// version is set at build time (-ldflags "-X main.version=…"); dev builds say "dev".
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run with support for debuggers such as delve")
	flag.Parse()
	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: provider.Address,
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
