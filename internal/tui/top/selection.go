package top

import tea "charm.land/bubbletea/v2"

// refreshRows rebuilds the table's rows if the data or the filter changed.
func (m *Model) refreshRows() {
	if m.rowsStale {
		m.rows = buildRows(m.units, m.ups, m.filter)
		if hs, ok := m.o.Backend.(hostsBackend); ok {
			m.rows = groupByHost(m.rows, hs.Hosts(), m.filter)
		}
		m.rowsStale = false
	}
}

// reselect keeps the cursor on the selected unit after the rows changed;
// if that unit is gone (or filtered out), the cursor goes to the nearest
// row and the panes follow it.
func (m *Model) reselect() tea.Cmd {
	m.refreshRows()
	for i, r := range m.rows {
		if r.selectable() && r.name == m.sel {
			m.selIdx = i
			m.keepSelectionVisible()
			return nil
		}
	}
	if i, ok := m.nearestSelectable(m.selIdx); ok {
		return m.selectRow(i)
	}
	m.selIdx, m.top = 0, 0
	if m.sel != "" {
		m.sel = ""
		return m.follow()
	}
	return nil
}

// nearestSelectable finds a unit row at i, else after it, else before.
func (m *Model) nearestSelectable(i int) (int, bool) {
	i = min(max(i, 0), len(m.rows)-1)
	for j := i; j >= 0 && j < len(m.rows); j++ {
		if m.rows[j].selectable() {
			return j, true
		}
	}
	for j := i - 1; j >= 0; j-- {
		if m.rows[j].selectable() {
			return j, true
		}
	}
	return 0, false
}

// selectRow puts the cursor on row i, and the panes on its unit.
func (m *Model) selectRow(i int) tea.Cmd {
	m.selIdx = i
	m.keepSelectionVisible()
	if name := m.rows[i].name; name != m.sel {
		m.sel = name
		return m.follow()
	}
	return nil
}

// geometry splits the lines between the title, column header, status
// and help lines (one each) into the table and, in the table view, the
// preview (its heading included).
func (m *Model) geometry() (tableH, previewH int) {
	body := max(m.height-4, 0)
	if m.mode == modeTable && body >= 8 {
		previewH = min(body*2/5, 16)
	}
	return body - previewH, previewH
}

// pageSize is how far PgUp and PgDn move.
func (m *Model) pageSize() int {
	h, _ := m.geometry()
	return max(h-1, 1)
}

// keepSelectionVisible scrolls the table so that the cursor is on screen,
// with the heading of its group when it is the group's first row.
func (m *Model) keepSelectionVisible() {
	h, _ := m.geometry()
	if h <= 0 {
		return
	}
	want := m.selIdx
	if want > 0 && want < len(m.rows) && !m.rows[want-1].selectable() {
		want-- // show the heading too
	}
	if want < m.top {
		m.top = want
	}
	if m.selIdx >= m.top+h {
		m.top = m.selIdx - h + 1
	}
	m.top = min(m.top, max(len(m.rows)-h, 0))
	m.top = max(m.top, 0)
}
