package main

// managerLease writes config/'s manager Lease into the release namespace: helm
// installs it with the manager and removes it on uninstall, when the manager's
// pods may outlive the release's RBAC and could not delete it themselves.
func (g *gen) managerLease() error {
	docs, err := g.docs("config/manager/lease.yaml")
	if err != nil {
		return err
	}
	for _, d := range docs {
		setPath(d, releaseNS, "metadata", "namespace")
	}
	return g.write("manager-lease.yaml", ".Values.manager.enabled", labelsReplace(nil), withLabels(docs)...)
}
