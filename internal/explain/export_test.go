package explain

// Templates returns the template nodes of an autoscaled group, one per zone.
func (e *Explainer) Templates(group string) []*Template { return e.templates[group] }
