terraform {
  required_providers {
    ferry = {
      source = "ferry-mq/ferry"
    }
  }
}

# endpoint and token default to FERRY_ENDPOINT and FERRY_TOKEN.
provider "ferry" {
  endpoint = "http://127.0.0.1:8080"
}
